"""Sources rescale: a job stopped with a savepoint while its source (NumberSequenceSource,
or a FileSource over several files) runs at parallelism 2 resumes with the source at
parallelism 3 or 1, each new subtask reading its share of the old subtasks' splits from
where they were; with an exactly-once FileSink, the two runs' output together is every
record exactly once, as an uninterrupted run's. The same from a retained checkpoint of
a cancelled job."""

from __future__ import annotations

import pickle
import re
import textwrap
import time
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.checkpoint import read_state
from weir.core.job_status import JobStatus
from weir.datastream.connectors._file_source_reader import owner_of
from weir.state import read_savepoint

pytestmark = pytest.mark.spark

NUMBERS = 12_000
FILES = 6
LINES_PER_FILE = 2_000
DEADLINE_S = 120

# argv: output directory, checkpoint directory, "slow" or "fast", and the input: a
# directory of files, "monitor:" and a directory to watch for new files, or "numbers".
# Every operator runs at the parallelism of `weir run -p`, the source too, chained into
# one task.
JOB = textwrap.dedent(
    f"""
    import sys
    import time

    from weir.common import Duration, Types, WatermarkStrategy
    from weir.datastream import (
        ExternalizedCheckpointRetention, MapFunction, StreamExecutionEnvironment,
    )
    from weir.datastream.connectors import FileSink, FileSource, StreamFormat
    from weir.datastream.connectors.file_system import BucketAssigner, Encoder, RollingPolicy
    from weir.datastream.connectors.number_seq import NumberSequenceSource

    out, checkpoints, speed, source = sys.argv[1:5]


    class Throttle(MapFunction):
        def map(self, value):
            if speed == "slow":
                time.sleep(0.001)  # so that the test stops the job midway
            return str(value)


    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(300)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(checkpoints)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    if source == "numbers":
        reader = NumberSequenceSource(0, {NUMBERS} - 1)
    elif source.startswith("monitor:"):
        reader = (
            FileSource.for_record_stream_format(
                StreamFormat.text_line_format(), source.removeprefix("monitor:")
            )
            .monitor_continuously(Duration.of_millis(200))
            .build()
        )
    else:
        reader = FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), source
        ).build()
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        # Committed at every checkpoint, so that an unbounded run's output shows soon.
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(reader, WatermarkStrategy.no_watermarks(), "input")
        .uid("input")
        .map(Throttle(), output_type=Types.STRING())
        .uid("throttle")
        .sink_to(sink)
        .uid("files")
    )
    env.execute("rescaled source")
    """
)


def _job_id(capsys) -> str:
    match = re.search(r"JobID ([0-9a-f]{32})", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    return match.group(1)


def _stop_midway(cluster, tmp_path: Path, capsys, args: list[str]) -> tuple[Path, str]:
    """Runs the job at parallelism 2 until a checkpoint completed, then stops it with a
    savepoint; returns the program and the savepoint's path."""
    script = tmp_path / "rescaled_source.py"
    script.write_text(JOB)
    assert cli.main(["run", "-d", "-p", "2", "-m", cluster.address, str(script), *args]) == 0
    job_id = _job_id(capsys)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 1:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
    code = cli.main(["stop", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id])
    assert code == 0
    match = re.search(r"Savepoint completed\. Path: (\S+)", capsys.readouterr().out)
    assert match
    with DispatcherGateway(cluster.address) as gateway:
        status = gateway.wait_for_result(job_id, DEADLINE_S * 1000).status
    assert status == JobStatus.FINISHED.name
    return script, match.group(1)


def _splits_at(path: str) -> list[list[tuple]]:
    """The split states each old source subtask wrote into the savepoint."""
    sp = read_savepoint(path)
    (source,) = (op for op in sp.operators if op.uid == "input")
    state = sp.metadata.operator_states[source.operator_id]
    assert state.parallelism == 2
    return [
        # The savepoint's own files, written by this test's job.
        pickle.loads(read_state(handle))
        for _, subtask in sorted(state.subtask_states.items())
        for handle in subtask.source_split_state
    ]


def _resume(cluster, script: Path, path: str, args: list[str], parallelism: int) -> None:
    run = ["run", "-p", str(parallelism), "-m", cluster.address, "-s", path, str(script), *args]
    assert cli.main(run) == 0


def _lines(out: Path) -> list[str]:
    # Both runs write into one directory; the resumed job's FileSink commits there what
    # the savepoint's transaction held.
    return [
        line
        for path in out.rglob("*")
        if path.is_file() and not path.name.startswith(".")
        for line in path.read_text().splitlines()
    ]


@pytest.mark.parametrize("parallelism", [3, 1])
def test_a_number_sequence_stopped_at_parallelism_2_resumes_at_another(
    cluster, tmp_path, capsys, parallelism
):
    out = tmp_path / "out"
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    script, path = _stop_midway(
        cluster, tmp_path, capsys, [str(out), checkpoints, "slow", "numbers"]
    )
    # Stopped midway: both subtasks had read part of their range, not all of it.
    (first,), (second,) = _splits_at(path)
    assert 0 < first[0] < NUMBERS // 2 < second[0] < NUMBERS
    assert (first[1], second[1]) == (NUMBERS // 2, NUMBERS)

    _resume(cluster, script, path, [str(out), checkpoints, "fast", "numbers"], parallelism)
    assert sorted(_lines(out), key=int) == [str(n) for n in range(NUMBERS)]


def _names_for_both_subtasks(data: Path, prefix: str = "") -> list[str]:
    """File names of which each of two subtasks reads half (files go to subtasks by a
    hash of their path)."""
    names: list[list[str]] = [[], []]
    k = 0
    while min(map(len, names)) < FILES // 2:
        name = f"{prefix}{k}.txt"
        owned = names[owner_of(f"file://{data / name}", 2)]
        if len(owned) < FILES // 2:
            owned.append(name)
        k += 1
    return names[0] + names[1]


@pytest.mark.parametrize("parallelism", [3, 1])
def test_a_file_source_stopped_at_parallelism_2_resumes_at_another(
    cluster, tmp_path, capsys, parallelism
):
    data = tmp_path / "in"
    data.mkdir()
    expected = []
    for f in _names_for_both_subtasks(data):
        lines = [f"{f}-line{i}" for i in range(LINES_PER_FILE)]
        (data / f).write_text("\n".join(lines) + "\n")
        expected += lines
    out = tmp_path / "out"
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    script, path = _stop_midway(
        cluster, tmp_path, capsys, [str(out), checkpoints, "slow", str(data)]
    )
    # Stopped midway: some lines read, some left, in splits of both subtasks.
    splits = _splits_at(path)
    assert len(splits) == 2
    left = sum(LINES_PER_FILE - lines for subtask in splits for _, _, lines in subtask)
    assert 0 < left < len(expected)

    _resume(cluster, script, path, [str(out), checkpoints, "fast", str(data)], parallelism)
    assert sorted(_lines(out)) == sorted(expected)


def test_a_retained_checkpoint_of_a_cancelled_job_resumes_its_source_at_parallelism_3(
    cluster, tmp_path, capsys
):
    script = tmp_path / "rescaled_source.py"
    script.write_text(JOB)
    out = tmp_path / "out"
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    args = [str(out), checkpoints, "slow", "numbers"]
    assert cli.main(["run", "-d", "-p", "2", "-m", cluster.address, str(script), *args]) == 0
    job_id = _job_id(capsys)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 2:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
        gateway.cancel_job(job_id)
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "CANCELED"
        path = gateway.checkpoint_statistics(job_id).latest_completed_path
    assert path
    (first,), (second,) = _splits_at(path)
    assert 0 < first[0] < NUMBERS // 2 < second[0] < NUMBERS

    # What the cancelled run wrote after its checkpoint was never committed; the
    # resumed run reads it again, so the committed output is every number once.
    _resume(cluster, script, path, [str(out), checkpoints, "fast", "numbers"], 3)
    assert sorted(_lines(out), key=int) == [str(n) for n in range(NUMBERS)]


def test_a_monitoring_file_source_resumes_at_parallelism_3_and_finds_new_files_once(
    cluster, tmp_path, capsys
):
    data = tmp_path / "in"
    data.mkdir()
    expected = []
    for f in _names_for_both_subtasks(data):
        lines = [f"{f}-line{i}" for i in range(LINES_PER_FILE)]
        (data / f).write_text("\n".join(lines) + "\n")
        expected += lines
    out = tmp_path / "out"
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    watch = f"monitor:{data}"
    script, path = _stop_midway(cluster, tmp_path, capsys, [str(out), checkpoints, "slow", watch])
    kinds = {len(split) for splits in _splits_at(path) for split in splits}
    assert kinds == {3, 4}  # files being read, and the classes of paths each discovers

    args = [str(out), checkpoints, "fast", watch]
    run = ["run", "-d", "-p", "3", "-m", cluster.address, "-s", path, str(script), *args]
    assert cli.main(run) == 0
    job_id = _job_id(capsys)
    for f in _names_for_both_subtasks(data, "new-"):
        (data / f).write_text(f"{f}\n")
        expected.append(f)
    # Unbounded: wait for every line to be committed, then check none came twice.
    deadline = time.monotonic() + DEADLINE_S
    while len(lines := _lines(out)) < len(expected):
        assert time.monotonic() < deadline, f"{len(lines)} of {len(expected)} lines committed"
        time.sleep(0.1)  # polling interval
    assert sorted(lines) == sorted(expected)
    with DispatcherGateway(cluster.address) as gateway:
        gateway.cancel_job(job_id)
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "CANCELED"
