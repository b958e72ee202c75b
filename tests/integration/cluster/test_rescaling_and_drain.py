"""Rescaling from a retained (incremental rocksdb) checkpoint, and a stop with
``--drain``: event time ends (MAX_WATERMARK) before the savepoint's barrier, so every
window fires and the savepoint holds no window contents, where a plain savepoint of the
same job holds the open windows."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.core.job_status import JobStatus
from weir.state import read_savepoint

pytestmark = pytest.mark.spark

RECORDS = 20_000
KEYS = 4
DEADLINE_S = 120

# argv: output directory, checkpoint directory, "slow" or "fast". Each record's event
# time is its value (ms); windows of one second sum every key's values.
JOB = textwrap.dedent(
    f"""
    import sys
    import time

    from weir.common import Time, Types, WatermarkStrategy
    from weir.common.watermark_strategy import TimestampAssigner
    from weir.datastream import (
        EmbeddedRocksDBStateBackend, ExternalizedCheckpointRetention, MapFunction,
        StreamExecutionEnvironment,
    )
    from weir.datastream.connectors import FileSink
    from weir.datastream.connectors.file_system import BucketAssigner, Encoder
    from weir.datastream.connectors.number_seq import NumberSequenceSource
    from weir.datastream.window import TumblingEventTimeWindows

    out, checkpoints, speed = sys.argv[1:4]


    class Stamp(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value


    class KeyBy(MapFunction):
        def map(self, value):
            if speed == "slow":
                time.sleep(0.002)  # throttles the runs the test stops
            return (value % {KEYS}, value)


    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(300)
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage_dir(checkpoints)
    config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    env.set_state_backend(EmbeddedRocksDBStateBackend(True))
    sink = (
        FileSink.for_row_format(out, Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .build()
    )
    (
        env.from_source(
            NumberSequenceSource(0, {RECORDS} - 1),
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp()),
            "numbers",
        )
        .set_parallelism(1)
        .uid("numbers")
        .map(KeyBy())
        .set_parallelism(1)
        .uid("key-by")
        .key_by(lambda kv: kv[0])
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .uid("windows")
        .map(lambda kv: f"{{kv[0]}},{{kv[1]}}", output_type=Types.STRING())
        .uid("format")
        .sink_to(sink)
        .uid("files")
    )
    env.execute("windowed sums")
    """
)


def _expected() -> list[str]:
    sums: dict[tuple[int, int], int] = {}
    for value in range(RECORDS):
        window = (value % KEYS, value // 1000)
        sums[window] = sums.get(window, 0) + value
    return sorted(f"{key},{total}" for (key, _), total in sums.items())


def _lines(*outs: Path) -> list[str]:
    return sorted(
        line
        for out in outs
        for path in out.rglob("*")
        if path.is_file() and not path.name.startswith(".")
        for line in path.read_text().splitlines()
    )


def _submit(address: str, script: Path, args: list[str], parallelism: int) -> str:
    with DispatcherGateway(address) as gateway:
        before = {job.job_id for job in gateway.list_jobs(include_terminated=True)}
        run = ["run", "-d", "-p", str(parallelism), "-m", address, str(script), *args]
        assert cli.main(run) == 0
        (job_id,) = {job.job_id for job in gateway.list_jobs(include_terminated=True)} - before
    return job_id


def _await_checkpoints(gateway: DispatcherGateway, job_id: str, count: int) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while gateway.checkpoint_statistics(job_id).num_completed < count:
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.1)  # polling interval


def _window_contents(path: str) -> list[tuple[object, object]]:
    sp = read_savepoint(path)
    (windows,) = (op for op in sp.operators if op.uid == "windows")
    names = {
        meta.name
        for subtask in sp.metadata.operator_states[windows.operator_id].subtask_states.values()
        for handle in subtask.managed_keyed_state
        for meta in handle.state_meta
        if meta.name.startswith("_weir_window")
    }
    assert names, "the window operator recorded no window state"
    return [entry for name in sorted(names) for entry in sp.keyed_state("windows", name)]


def test_a_retained_incremental_checkpoint_resumes_at_another_parallelism(
    cluster, tmp_path, capsys
):
    script = tmp_path / "windowed_sums.py"
    script.write_text(JOB)
    checkpoints = f"file://{tmp_path / 'checkpoints'}"
    first, resumed = tmp_path / "out-first", tmp_path / "out-resumed"
    job_id = _submit(cluster.address, script, [str(first), checkpoints, "slow"], 2)
    with DispatcherGateway(cluster.address) as gateway:
        _await_checkpoints(gateway, job_id, 2)
        gateway.cancel_job(job_id)
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == "CANCELED"
        path = gateway.checkpoint_statistics(job_id).latest_completed_path
    assert path

    # rocksdb's native (incremental) handles of two subtasks, read by three.
    args = [str(resumed), checkpoints, "fast"]
    run = ["run", "-p", "3", "-m", cluster.address, "-s", path, str(script), *args]
    assert cli.main(run) == 0
    assert _lines(first, resumed) == _expected()


def test_stop_with_drain_fires_every_window_into_the_savepoint(cluster, tmp_path, capsys):
    script = tmp_path / "windowed_sums.py"
    script.write_text(JOB)
    args = [str(tmp_path / "out"), f"file://{tmp_path / 'checkpoints'}", "slow"]
    job_id = _submit(cluster.address, script, args, 2)
    with DispatcherGateway(cluster.address) as gateway:
        _await_checkpoints(gateway, job_id, 1)
        # A plain savepoint of the running job holds the windows still open.
        open_windows = _window_contents(gateway.trigger_savepoint(job_id, str(tmp_path / "sp")))
        assert open_windows

    code = cli.main(["stop", "--drain", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id])
    assert code == 0
    out = capsys.readouterr().out
    assert "with draining" in out
    drained = out.split("Savepoint completed. Path: ")[1].split()[0]
    assert _window_contents(drained) == []
    with DispatcherGateway(cluster.address) as gateway:
        details = gateway.wait_for_result(job_id, DEADLINE_S * 1000)
    assert details.status == JobStatus.FINISHED.name
