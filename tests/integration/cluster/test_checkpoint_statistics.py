"""Checkpoint statistics through the Dispatcher: counts and history of a running job from
its JobMaster, the last ones kept with the archived job, and ``weir checkpoints``."""

from __future__ import annotations

import time

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.common import JobStatus, WatermarkStrategy
from weir.core.checkpoint import CheckpointStatsSnapshot
from weir.core.errors import JobExecutionError
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

DEADLINE_S = 120


class Throttled(MapFunction):
    """Keeps the job running (slowly) until it is cancelled."""

    def map(self, value):
        time.sleep(0.001)  # throttles the stream so that it outlives the test's polling
        return (value % 4, value)


def _start_job(tmp_path):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(200)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{tmp_path / 'chk'}")
    (
        env.from_source(NumberSequenceSource(0, 10**9), WatermarkStrategy.no_watermarks(), "n")
        .map(Throttled())
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .add_sink(lambda _: None)
    )
    return env.execute_async("checkpoint statistics")


def _await_completed(gateway: DispatcherGateway, job_id: str, n: int) -> CheckpointStatsSnapshot:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        stats = gateway.checkpoint_statistics(job_id)
        if stats.num_completed >= n:
            return stats
        assert time.monotonic() < deadline, f"fewer than {n} checkpoints completed: {stats}"
        time.sleep(0.1)  # polling interval


def test_statistics_of_a_running_and_an_ended_job(cluster, tmp_path, capsys):
    client = _start_job(tmp_path)
    job_id = str(client.get_job_id())
    try:
        with DispatcherGateway(cluster.address) as gateway:
            live = _await_completed(gateway, job_id, 2)
            assert live.checkpointing_enabled
            assert live.num_triggered >= live.num_completed + live.num_failed
            assert live.num_restored == 0
            completed = [e for e in live.history if e.status == "COMPLETED"]
            assert completed
            for entry in completed:
                assert entry.trigger_timestamp_ms > 0
                assert entry.end_to_end_duration_ms > 0
                assert entry.num_acknowledged == entry.num_subtasks > 0
                assert entry.state_size_bytes > 0  # the keyed sums and source positions
                assert entry.sync_duration_ms >= 0
                assert entry.async_duration_ms >= 0
                assert entry.alignment_duration_ms >= 0
                assert entry.persisted_in_flight_bytes == 0  # aligned checkpoints
            ids = [e.checkpoint_id for e in live.history]
            assert ids == sorted(ids, reverse=True)
            assert f"chk-{completed[0].checkpoint_id}" in live.latest_completed_path

            assert cli.main(["checkpoints", "-m", cluster.address, job_id]) == 0
            out = capsys.readouterr().out
            assert f"Checkpoints of job {job_id}" in out
            assert "COMPLETED" in out
            assert "END-TO-END" in out

            client.cancel().result()
            with pytest.raises(JobExecutionError, match="was cancelled"):
                client.get_job_execution_result().result()
            assert client.get_job_status().result() == JobStatus.CANCELED
            archived = gateway.checkpoint_statistics(job_id)
            assert archived.num_completed >= live.num_completed
            assert archived.num_in_progress == 0
            assert archived.history

            assert cli.main(["list", "-a", "-v", "-m", cluster.address]) == 0
            out = capsys.readouterr().out
            assert f"checkpoints: triggered {archived.num_triggered}" in out
    finally:
        if not client.get_job_status().result().is_globally_terminal_state():
            client.cancel()


def test_statistics_of_a_job_without_checkpointing(cluster, capsys):
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3]).add_sink(lambda _: None)
    result = env.execute("no checkpoints")
    with DispatcherGateway(cluster.address) as gateway:
        stats = gateway.checkpoint_statistics(str(result.get_job_id()))
    assert not stats.checkpointing_enabled
    assert stats.num_triggered == 0
    assert cli.main(["checkpoints", "-m", cluster.address, str(result.get_job_id())]) == 0
    assert "Checkpointing is not enabled" in capsys.readouterr().out


def test_statistics_of_an_unknown_job(cluster, capsys):
    assert cli.main(["checkpoints", "-m", cluster.address, "0" * 32]) == 1
    assert "no job with id" in capsys.readouterr().err
