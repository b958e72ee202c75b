"""FileSource: splits, batches, position snapshots and continuous monitoring."""

from __future__ import annotations

import gzip

import pytest

from weir.common import Duration
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
    state = reader.snapshot_state()
    reader.poll_batch(3)  # read on, then "crash"
    reader.close()
    restored = source.create_reader(Ctx())
    restored.restore_state(state)
    assert head + drain(restored) == lines + lines


def test_compressed_files_are_decompressed(tmp_path):
    with gzip.open(tmp_path / "z.txt.gz", "wt") as f:
        f.write("g1\ng2\n")
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    reader = source.create_reader(Ctx())
    assert reader.poll_batch(1) == ["g1"]
    state = reader.snapshot_state()
    restored = source.create_reader(Ctx())
    restored.restore_state(state)
    assert drain(restored) == ["g2"]


def test_monitor_continuously_discovers_new_files(tmp_path):
    clock = FakeClock()
    (tmp_path / "1.txt").write_text("one\n")
    builder = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).monitor_continuously(Duration.of_seconds(10))
    built = builder.build()
    assert not built.is_bounded()
    source = FileSource(
        built._paths, built._stream_format, built._discovery_interval_ms, clock=clock
    )
    reader = source.create_reader(Ctx())
    assert reader.poll_batch(10) == ["one"]
    assert reader.poll_batch(10) == []  # idle, not ended
    (tmp_path / "2.txt").write_text("two\n")
    clock.now += 9.9
    assert reader.poll_batch(10) == []  # not yet time to look again
    state = reader.snapshot_state()
    clock.now += 0.1
    assert reader.poll_batch(10) == ["two"]
    assert reader.poll_batch(10) == []
    # a restored reader knows "1.txt" was read and finds "2.txt" again
    restored = source.create_reader(Ctx())
    restored.restore_state(state)
    assert restored.poll_batch(10) == ["two"]
    assert restored.poll_batch(10) == []


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
