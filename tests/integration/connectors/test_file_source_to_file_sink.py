"""FileSource → FileSink over real files, with checkpoints and a crash driven by hand."""

from __future__ import annotations

import fsspec
import pytest
from function_state_testing import StateHooks

from weir.datastream.connectors.file_system import (
    BucketAssigner,
    Encoder,
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)
from weir.taskmanager.operators.sinks import END_OF_INPUT_CHECKPOINT_ID


class Ctx:
    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_number_of_parallel_subtasks(self) -> int:
        return 1


def committed(out) -> list[str]:
    return [
        line
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.name.startswith(".")
        for line in p.read_text().splitlines()
    ]


def make_sink(out) -> FileSink:
    return (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_rolling_policy(RollingPolicy.default_rolling_policy(part_size=200))
        .with_output_file_config(OutputFileConfig.builder().with_part_suffix(".txt").build())
        .build()
    )


@pytest.mark.parametrize("crash_after_batches", [1, 4, 9])
def test_a_crash_between_checkpoints_gives_exactly_once_output(tmp_path, crash_after_batches):
    src = tmp_path / "in"
    src.mkdir()
    expected = []
    for f in range(3):
        lines = [f"file{f}-line{i}" for i in range(40)]
        (src / f"{f}.txt").write_text("\n".join(lines) + "\n")
        expected += [line.upper() for line in lines]
    out = tmp_path / "out"
    source = FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(src)).build()

    def run(reader, hooks, checkpoint_every, start_checkpoint, stop_after=None):
        """Polls, maps, writes; checkpoints (source position + sink state) every few
        batches and completes them; returns the last completed checkpoint's states."""
        sink = hooks.function
        completed = None
        checkpoint = start_checkpoint
        batches = 0
        while (batch := reader.poll_batch(7)) is not None:
            for line in batch:
                sink.invoke(line.upper(), None)
            batches += 1
            if batches % checkpoint_every == 0:
                checkpoint += 1
                states = (reader.snapshot_splits(), hooks.snapshot(checkpoint), checkpoint)
                sink.notify_checkpoint_complete(checkpoint)
                completed = states
            if stop_after is not None and batches == stop_after:
                return completed, False
        # The end of input and the final checkpoint, taken after finish() (FLIP-147).
        sink.finish()
        checkpoint += 1
        hooks.snapshot(checkpoint)
        sink.notify_checkpoint_complete(checkpoint)
        sink.close()
        return completed, True

    reader = source.create_reader(Ctx())
    hooks = StateHooks(make_sink(out)).initialize()
    completed, done = run(reader, hooks, 3, 0, stop_after=crash_after_batches + 3)
    assert not done
    # crash: nothing is closed; recover from the last completed checkpoint (or from scratch)
    assert len(committed(out)) < len(expected)
    reader = source.create_reader(Ctx())
    hooks = StateHooks(make_sink(out))
    if completed is None:
        hooks.initialize()
        last = 0
    else:
        reader.restore_splits(completed[0])
        hooks.initialize(completed[1])
        last = completed[2]
    _, done = run(reader, hooks, 3, last)
    assert done
    result = committed(out)
    assert sorted(result) == sorted(expected)
    assert len(result) == len(set(result))
    assert not [p for p in out.rglob(".*")]  # nothing hidden is left


def test_memory_filesystem_round_trip(tmp_path):
    fs = fsspec.filesystem("memory")
    root = f"/{tmp_path.name}"
    fs.pipe_file(f"{root}/in/a.txt", b"x\ny\n")
    try:
        reader = (
            FileSource.for_record_stream_format(
                StreamFormat.text_line_format(), f"memory://{root}/in"
            )
            .build()
            .create_reader(Ctx())
        )
        sink = (
            FileSink.for_row_format(f"memory://{root}/out", Encoder.simple_string_encoder())
            .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
            .build()
        )
        hooks = StateHooks(sink).initialize()
        while (batch := reader.poll_batch(10)) is not None:
            for line in batch:
                sink.invoke(line, None)
        # The end of input of a job without checkpoints, as the sink operator drives it.
        sink.finish()
        hooks.snapshot(END_OF_INPUT_CHECKPOINT_ID)
        sink.notify_checkpoint_complete(END_OF_INPUT_CHECKPOINT_ID)
        names = fs.ls(f"{root}/out", detail=False)
        assert len(names) == 1 and not names[0].rpartition("/")[2].startswith(".")
        assert fs.cat_file(names[0]) == b"x\ny\n"
    finally:
        fs.rm(root, recursive=True)
