"""FileSource: splits, batches, split snapshots (restored at the same and at another
parallelism) and continuous monitoring."""

from __future__ import annotations

import gzip
import json

import pytest

from weir.common import Duration
from weir.core.source import assign_splits
from weir.datastream.connectors.file_system import FileSource, StreamFormat


class Ctx:
    def __init__(self, index: int = 0, parallelism: int = 1) -> None:
        self.index, self.parallelism = index, parallelism

    def get_index_of_this_subtask(self) -> int:
        return self.index

    def get_number_of_parallel_subtasks(self) -> int:
        return self.parallelism


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def drain(reader, max_records: int = 3) -> list[str]:
    out: list[str] = []
    while (batch := reader.poll_batch(max_records)) is not None:
        assert batch, "a bounded reader never idles"
        out.extend(batch)
    return out


@pytest.fixture
def files(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.txt").write_text("a1\na2\r\na3")  # CRLF and no final newline
    (d / "b.txt").write_text("b1\nb2\n")
    (d / "sub").mkdir()
    (d / "sub" / "c.txt").write_text("c1\n")
    (d / ".hidden").write_text("no\n")
    (d / "_SUCCESS").write_text("no\n")
    return d


def test_reads_every_line_of_every_visible_file(files):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), f"file://{files}"
    ).build()
    assert source.is_bounded()
    assert sorted(drain(source.create_reader(Ctx()))) == ["a1", "a2", "a3", "b1", "b2", "c1"]


@pytest.mark.parametrize("charset", ["UTF-8", "UTF-16"])
def test_lines_are_read_as_javas_text_line_format_reads_them(tmp_path, charset):
    # BufferedReader.readLine over an InputStreamReader: '\r', '\n' and '\r\n' end a
    # line, and malformed bytes read as U+FFFD instead of failing the job.
    d = tmp_path / "in"
    d.mkdir()
    text = "a\rb\r\r\nc\n\u00e9\r"
    data = (
        text.encode("utf-8") + b"bad \xff\xed\xa0\x80 end\n"
        if charset == "UTF-8"
        else (text.encode("utf-16-le") + b"\x00\xd8x\x00")
    )
    if charset == "UTF-16":
        data = b"\xff\xfe" + data
    (d / "a.txt").write_bytes(data)
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(charset), f"file://{d}"
    ).build()
    lines = drain(source.create_reader(Ctx()))
    if charset == "UTF-8":
        assert lines == ["a", "b", "", "c", "\u00e9", "bad \ufffd\ufffd end"]
    else:
        # A high surrogate takes the unit after it into one malformed sequence, as in Java.
        assert lines == ["a", "b", "", "c", "\u00e9", "\ufffd"]


def test_splits_are_assigned_to_exactly_one_subtask(files):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(files)
    ).build()
    parts = [drain(source.create_reader(Ctx(i, 3))) for i in range(3)]
    assert sorted(x for p in parts for x in p) == ["a1", "a2", "a3", "b1", "b2", "c1"]
    again = [drain(source.create_reader(Ctx(i, 3))) for i in range(3)]
    assert parts == again  # deterministic


@pytest.mark.parametrize("charset", ["UTF-8", "UTF-16"])
def test_snapshot_and_restore_resume_exactly(tmp_path, charset):
    lines = [f"line {i} ü" for i in range(50)]
    for name in ("x.txt", "y.txt"):
        (tmp_path / name).write_bytes(("\n".join(lines) + "\n").encode(charset))
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(charset), str(tmp_path)
    ).build()
    reader = source.create_reader(Ctx())
    head: list[str] = []
    for _ in range(20):  # 60 lines: past the end of the first file
        head.extend(reader.poll_batch(3))
    splits = reader.snapshot_splits()
    assert len(splits) == 1  # the first file is finished, so not listed
    reader.poll_batch(3)  # read on, then "crash"
    reader.close()
    restored = source.create_reader(Ctx())
    restored.restore_splits(splits)
    assert head + drain(restored) == lines + lines


def test_compressed_files_are_decompressed(tmp_path):
    with gzip.open(tmp_path / "z.txt.gz", "wt") as f:
        f.write("g1\ng2\n")
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    reader = source.create_reader(Ctx())
    assert reader.poll_batch(1) == ["g1"]
    splits = reader.snapshot_splits()
    restored = source.create_reader(Ctx())
    restored.restore_splits(splits)
    assert drain(restored) == ["g2"]


@pytest.mark.parametrize(("old", "new"), [(2, 3), (2, 1), (3, 2), (1, 4)])
def test_splits_restored_at_another_parallelism_read_every_line_once(tmp_path, old, new):
    expected = []
    for f in range(5):
        lines = [f"f{f}-{i}" for i in range(10 + f)]
        (tmp_path / f"{f}.txt").write_text("\n".join(lines) + "\n")
        expected += lines
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    heads: list[str] = []
    lists = []
    for index in range(old):
        reader = source.create_reader(Ctx(index, old))
        heads += reader.poll_batch(4) or []  # into its first file
        lists.append(reader.snapshot_splits(1))
    tails: list[str] = []
    for index in range(new):
        reader = source.create_reader(Ctx(index, new))
        reader.restore_splits(assign_splits(lists, index, new))
        tails += drain(reader)
    assert sorted(heads + tails) == sorted(expected)


def test_a_snapshot_before_the_first_poll_names_the_files_to_read(files):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(files)
    ).build()
    splits = source.create_reader(Ctx()).snapshot_splits(1)
    assert sorted(p.rsplit("/", 1)[-1] for p, _, _ in splits) == ["a.txt", "b.txt", "c.txt"]
    restored = source.create_reader(Ctx())
    restored.restore_splits(splits)
    assert sorted(drain(restored)) == ["a1", "a2", "a3", "b1", "b2", "c1"]


def test_a_position_written_before_splits_still_restores(files):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(files)
    ).build()
    reader = source.create_reader(Ctx())
    reader.restore_state(json.dumps({"splits": [[f"file://{files}/b.txt", 3, 1]], "finished": []}))
    assert drain(reader) == ["b2"]


def _monitoring(tmp_path, clock) -> FileSource:
    built = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(tmp_path))
        .monitor_continuously(Duration.of_seconds(10))
        .build()
    )
    assert not built.is_bounded()
    return FileSource(built._paths, built._stream_format, built._discovery_interval_ms, clock=clock)


def test_monitor_continuously_discovers_new_files(tmp_path):
    clock = FakeClock()
    (tmp_path / "1.txt").write_text("one\n")
    source = _monitoring(tmp_path, clock)
    reader = source.create_reader(Ctx())
    assert reader.poll_batch(10) == ["one"]
    assert reader.poll_batch(10) == []  # idle, not ended
    (tmp_path / "2.txt").write_text("two\n")
    clock.now += 9.9
    assert reader.poll_batch(10) == []  # not yet time to look again
    splits = reader.snapshot_splits(1)
    clock.now += 0.1
    assert reader.poll_batch(10) == ["two"]
    assert reader.poll_batch(10) == []
    # a restored reader knows "1.txt" was read and finds "2.txt" again
    restored = source.create_reader(Ctx())
    restored.restore_splits(splits)
    assert restored.poll_batch(10) == ["two"]
    assert restored.poll_batch(10) == []


def _poll_all(readers, clock) -> list[str]:
    """Every line the readers have now, past one discovery interval."""
    clock.now += 10
    out: list[str] = []
    for reader in readers:
        while batch := reader.poll_batch(3):
            out.extend(batch)
    return out


@pytest.mark.parametrize(("old", "new"), [(2, 3), (2, 1), (3, 2)])
def test_monitoring_restored_at_another_parallelism_reads_every_file_once(tmp_path, old, new):
    clock = FakeClock()
    for f in range(6):
        (tmp_path / f"old-{f}.txt").write_text("".join(f"old-{f}-{i}\n" for i in range(5)))
    source = _monitoring(tmp_path, clock)
    first = [source.create_reader(Ctx(i, old)) for i in range(old)]
    read = [line for reader in first for line in reader.poll_batch(3)]  # part of a file each
    lists = [reader.snapshot_splits(1) for reader in first]
    kinds = {len(split) for splits in lists for split in splits}
    assert kinds == {3, 4}  # file splits and the discovery classes

    resumed = [source.create_reader(Ctx(i, new)) for i in range(new)]
    for index, reader in enumerate(resumed):
        reader.restore_splits(assign_splits(lists, index, new))
    read += _poll_all(resumed, clock)
    for f in range(8):
        (tmp_path / f"new-{f}.txt").write_text(f"new-{f}\n")
    read += _poll_all(resumed, clock)
    read += _poll_all(resumed, clock)  # nothing is found twice

    expected = [f"old-{f}-{i}" for f in range(6) for i in range(5)] + [f"new-{f}" for f in range(8)]
    assert sorted(read) == sorted(expected)


def test_a_missing_path_is_a_clear_error(tmp_path):
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path / "nope")
    ).build()
    with pytest.raises(FileNotFoundError, match="no file or directory"):
        source.create_reader(Ctx()).poll_batch(1)


def test_memory_filesystem(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    root = f"/{tmp_path.name}"
    fs.pipe_file(f"{root}/m.txt", b"m1\nm2\n")
    try:
        source = FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), f"memory://{root}"
        ).build()
        assert drain(source.create_reader(Ctx())) == ["m1", "m2"]
    finally:
        fs.rm(root, recursive=True)
