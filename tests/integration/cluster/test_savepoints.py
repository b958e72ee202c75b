"""Savepoints on the MiniCluster, through the CLI: a stop with savepoint resumed at
another parallelism and on the other backend gives exactly the output of an
uninterrupted run (exactly-once FileSink); a savepoint leaves its job running, can be
moved and restored from its new place on the other backend, read with
``weir.state.read_savepoint`` and disposed; state no operator claims is refused by uid
unless ``--allowNonRestoredState``; and the errors a user can cause say what to do and
leave the cluster running."""

from __future__ import annotations

import re
import shutil
import textwrap
import time
from collections import defaultdict
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.job_status import JobStatus
from weir.state import read_savepoint

pytestmark = pytest.mark.spark

RECORDS = 20_000
KEYS = 5
DEADLINE_S = 120

# argv: output directory, checkpoint directory, "slow" or "fast", state backend, uid of
# the running sum (any other than "sum" renames the sink too: a FileSink's state refers
# to in-progress files outside the savepoint, which the first job resumed from it
# consumes, so one savepoint of it is resumed once). The source and the map chained to
# it stay at parallelism 1, so each key's records reach the sum in order and its running
# totals are the same in every run: the rest of the job runs at the parallelism of
# `weir run -p` (test_source_rescaling.py rescales sources).
JOB = textwrap.dedent(
    f"""
    import sys
    import time

    from weir.common import Types, WatermarkStrategy
    from weir.datastream import (
        EmbeddedRocksDBStateBackend, HashMapStateBackend, KeyedProcessFunction,
        MapFunction, StreamExecutionEnvironment,
    )
    from weir.datastream.connectors import FileSink
    from weir.datastream.connectors.file_system import BucketAssigner, Encoder
    from weir.datastream.connectors.number_seq import NumberSequenceSource
    from weir.datastream.state import ValueStateDescriptor

    out, checkpoints, speed, backend, sum_uid = sys.argv[1:6]


    class KeyBy(MapFunction):
        def map(self, value):
            if speed == "slow":
                time.sleep(0.002)  # throttles the run the test stops
            return (value % {KEYS}, value + 1)


    class RunningTotal(KeyedProcessFunction):
        def open(self, runtime_context):
            self.total = runtime_context.get_state(
                ValueStateDescriptor("total", Types.LONG())
            )

        def process_element(self, value, ctx):
            total = (self.total.value() or 0) + value[1]
            self.total.update(total)
            yield f"{{value[0]}},{{total}}"


    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(300)
    env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoints)
    env.set_state_backend(
        EmbeddedRocksDBStateBackend(True) if backend == "rocksdb" else HashMapStateBackend()
    )
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, {RECORDS} - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .uid("numbers")
        .map(KeyBy())
        .set_parallelism(1)
        .uid("key-by")
        .key_by(lambda kv: kv[0])
        .process(RunningTotal(), output_type=Types.STRING())
        .uid(sum_uid)
        .sink_to(sink)
        .uid("files" if sum_uid == "sum" else "files-" + sum_uid)
    )
    env.execute("running totals")
    """
)


def _expected() -> dict[int, list[int]]:
    """The running totals of an uninterrupted run, per key, in order."""
    totals: dict[int, list[int]] = defaultdict(list)
    for value in range(RECORDS):
        key = value % KEYS
        totals[key].append((totals[key][-1] if totals[key] else 0) + value + 1)
    return totals


def _lines(*outs: Path) -> list[str]:
    return sorted(
        line
        for out in outs
        for path in out.rglob("*")
        if path.is_file() and not path.name.startswith(".")
        for line in path.read_text().splitlines()
    )


def _job_id(capsys) -> str:
    match = re.search(r"JobID ([0-9a-f]{32})", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    return match.group(1)


def _savepoint_path(text: str) -> str:
    match = re.search(r"Savepoint completed\. Path: (\S+)", text)
    assert match, text
    return match.group(1)


def _start_slow(cluster, tmp_path: Path, capsys, backend: str, out: Path) -> tuple[Path, str]:
    script = tmp_path / "running_totals.py"
    script.write_text(JOB)
    args = [str(out), f"file://{tmp_path / 'checkpoints'}", "slow", backend, "sum"]
    assert cli.main(["run", "-d", "-p", "2", "-m", cluster.address, str(script), *args]) == 0
    job_id = _job_id(capsys)
    with DispatcherGateway(cluster.address) as gateway:
        deadline = time.monotonic() + DEADLINE_S
        while gateway.checkpoint_statistics(job_id).num_completed < 1:
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)  # polling interval
    return script, job_id


def test_stop_with_savepoint_then_resume_at_another_parallelism_equals_an_uninterrupted_run(
    cluster, tmp_path, capsys
):
    first, resumed = tmp_path / "out-first", tmp_path / "out-resumed"
    script, job_id = _start_slow(cluster, tmp_path, capsys, "hashmap", first)

    code = cli.main(["stop", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id])
    assert code == 0
    path = _savepoint_path(capsys.readouterr().out)
    with DispatcherGateway(cluster.address) as gateway:
        details = gateway.wait_for_result(job_id, DEADLINE_S * 1000)
    assert details.status == JobStatus.FINISHED.name  # flink stop ends a job FINISHED
    stopped_at = dict(read_savepoint(path).keyed_state("sum", "total"))
    assert 0 < sum(stopped_at.values()) < sum(v[-1] for v in _expected().values())

    # Resumed at parallelism 3 on the rocksdb backend: keyed state moves by key group,
    # the FileSink's list state is split, and what the savepoint covered is committed.
    args = [str(resumed), f"file://{tmp_path / 'checkpoints'}", "fast", "rocksdb", "sum"]
    run = ["run", "-p", "3", "-m", cluster.address, "-s", path, str(script), *args]
    assert cli.main(run) == 0

    expected = sorted(f"{k},{t}" for k, totals in _expected().items() for t in totals)
    assert _lines(first, resumed) == expected


@pytest.fixture(scope="module")
def savepoint_of_running_job(mini_cluster, tmp_path_factory) -> tuple[Path, Path, str]:
    """A savepoint of a running job on rocksdb (incremental checkpoints), taken with
    `weir savepoint`, then moved to another directory; the job keeps running and is
    cancelled after one more checkpoint. Returns the program, the first run's output
    and the savepoint's new path."""
    from weir.core.executor import register_executor

    tmp_path = tmp_path_factory.mktemp("savepoint")
    register_executor(mini_cluster.executor())
    try:
        script = tmp_path / "running_totals.py"
        script.write_text(JOB)
        out = tmp_path / "out-first"
        args = [str(out), f"file://{tmp_path / 'checkpoints'}", "slow", "rocksdb", "sum"]
        job_id = _submit_detached(mini_cluster.address, script, args)
        with DispatcherGateway(mini_cluster.address) as gateway:
            deadline = time.monotonic() + DEADLINE_S
            while gateway.checkpoint_statistics(job_id).num_completed < 1:
                assert time.monotonic() < deadline, "no checkpoint completed"
                time.sleep(0.1)  # polling interval
            path = gateway.trigger_savepoint(job_id, str(tmp_path / "savepoints"))
            assert gateway.job_details(job_id).status == JobStatus.RUNNING.name
            completed = gateway.checkpoint_statistics(job_id).num_completed
            while gateway.checkpoint_statistics(job_id).num_completed <= completed:
                assert time.monotonic() < deadline, "no checkpoint after the savepoint"
                time.sleep(0.1)  # polling interval
            gateway.cancel_job(job_id)
            assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "CANCELED"
    finally:
        register_executor(None)
    moved = tmp_path / "moved" / Path(path).name
    moved.parent.mkdir()
    shutil.move(path.removeprefix("file://"), moved)
    return script, out, str(moved)


def _submit_detached(address: str, script: Path, args: list[str]) -> str:
    with DispatcherGateway(address) as gateway:
        before = {job.job_id for job in gateway.list_jobs(include_terminated=True)}
        assert cli.main(["run", "-d", "-p", "2", "-m", address, str(script), *args]) == 0
        (job_id,) = {job.job_id for job in gateway.list_jobs(include_terminated=True)} - before
    return job_id


def test_a_moved_savepoint_restores_on_the_other_backend(
    cluster, tmp_path, savepoint_of_running_job
):
    script, _, path = savepoint_of_running_job
    at_savepoint = dict(read_savepoint(path).keyed_state("sum", "total"))
    assert set(at_savepoint) == set(range(KEYS))

    out = tmp_path / "out-resumed"
    args = [str(out), f"file://{tmp_path / 'checkpoints'}", "fast", "hashmap", "sum"]
    assert cli.main(["run", "-p", "2", "-m", cluster.address, "-s", path, str(script), *args]) == 0

    # The resumed run continues every key's total from the savepoint's, record by record
    # (had it started empty, its totals would be lower). Its FileSink also commits, into
    # its own directory, what the savepoint's pending transaction held: totals up to the
    # savepoint's, each an uninterrupted run's and once.
    after, before = [], []
    for line in _lines(out):
        key, total = map(int, line.split(","))
        (after if total > at_savepoint[key] else before).append(line)
    expected = sorted(
        f"{k},{t}" for k, totals in _expected().items() for t in totals if t > at_savepoint[k]
    )
    assert after == expected
    passed = {f"{k},{t}" for k, totals in _expected().items() for t in totals}
    assert set(before) <= passed and len(set(before)) == len(before)


def test_the_reader_and_inspect_show_operators_by_uid(savepoint_of_running_job, capsys):
    _, _, path = savepoint_of_running_job
    sp = read_savepoint(path)
    by_uid = {op.uid: op for op in sp.operators}
    assert by_uid["sum"].keyed_states == {"total": "VALUE"}
    assert by_uid["sum"].parallelism == 2
    assert by_uid["numbers"].has_source_position
    assert set(by_uid["files"].operator_states.values()) == {"LIST"}  # the FileSink's
    totals = dict(sp.keyed_state("sum", "total"))
    # Each total is one of the running totals an uninterrupted run passes through.
    for key, total in totals.items():
        assert total in _expected()[key]
    with pytest.raises(KeyError, match="no operator with uid 'nope'.*sum"):
        sp.keyed_state("nope", "total")

    assert cli.main(["savepoint", "--inspect", path]) == 0
    printed = capsys.readouterr().out
    assert "uid 'sum': parallelism 2, max parallelism 128" in printed
    assert "keyed state 'total': VALUE" in printed


def test_unclaimed_state_is_refused_by_uid_unless_allowed(
    cluster, tmp_path, savepoint_of_running_job, capsys
):
    script, _, path = savepoint_of_running_job
    out = tmp_path / "out-renamed"
    args = [str(out), f"file://{tmp_path / 'checkpoints'}", "fast", "hashmap", "total2"]
    run = ["run", "-m", cluster.address, "-s", path, str(script), *args]
    assert cli.main(run) == 1
    err = capsys.readouterr().err
    assert "uid 'files', uid 'sum'" in err
    assert "--allowNonRestoredState" in err

    assert cli.main([*run[:1], "-n", *run[1:]]) == 0
    # The totals start from zero under the new uid while the source resumes: every key
    # ends below its uninterrupted total.
    last = {}
    for line in _lines(out):
        key, total = map(int, line.split(","))
        last[key] = max(total, last.get(key, 0))
    assert all(0 < last[k] < _expected()[k][-1] for k in range(KEYS))


def test_dispose_deletes_the_savepoint_and_only_a_savepoint(
    tmp_path, savepoint_of_running_job, capsys
):
    _, _, path = savepoint_of_running_job
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    assert cli.main(["savepoint", "-d", str(copy)]) == 0
    assert "disposed" in capsys.readouterr().out
    assert not copy.exists()
    assert cli.main(["savepoint", "-d", str(copy)]) == 1
    assert "the path does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["savepoint", "--inspect", str(tmp_path / "empty")]) == 1
    assert "has no _metadata file" in capsys.readouterr().err


def test_errors_leave_the_job_and_cluster_running(cluster, tmp_path, capsys):
    script, job_id = _start_slow(cluster, tmp_path, capsys, "hashmap", tmp_path / "out")
    # No directory given and none configured: says which key to set; the job runs on.
    assert cli.main(["savepoint", "-m", cluster.address, job_id]) == 1
    assert "execution.checkpointing.savepoint-dir" in capsys.readouterr().err
    with DispatcherGateway(cluster.address) as gateway:
        assert gateway.job_details(job_id).status == JobStatus.RUNNING.name
        gateway.cancel_job(job_id)
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "CANCELED"
    # Not running any more: says why.
    assert cli.main(["savepoint", "-m", cluster.address, job_id, str(tmp_path / "sp")]) == 1
    assert "a savepoint is taken only while a job is RUNNING" in capsys.readouterr().err
    # A directory without _metadata refuses the submission, saying so.
    (tmp_path / "not-a-savepoint").mkdir()
    args = [str(tmp_path / "out2"), f"file://{tmp_path / 'checkpoints'}", "fast", "hashmap", "sum"]
    run = ["run", "-m", cluster.address, "-s", str(tmp_path / "not-a-savepoint"), str(script)]
    assert cli.main([*run, *args]) == 1
    assert "cannot start from" in capsys.readouterr().err
    with DispatcherGateway(cluster.address) as gateway:
        assert gateway.overview().task_managers >= 1
