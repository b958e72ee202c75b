"""Cancelling tasks whose user code does not stop (Flink's TaskCancelerWatchDog), on the
MiniCluster: a busy loop is interrupted and the job ends CANCELED; a loop that swallows
every interrupt makes its TaskManager exit after task.cancellation.timeout, and the next
job runs on a clean slot."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_checkpoint_recovery import await_condition

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, Types
from weir.datastream import MapFunction, StreamExecutionEnvironment

pytestmark = pytest.mark.spark


class Spin(MapFunction):
    """Loops for ever on its first record, after marking that it started; with
    ``swallow`` it catches every exception (interrupts included) and loops on."""

    def __init__(self, marker: str, swallow: bool) -> None:
        self.marker = marker
        self.swallow = swallow

    def map(self, value):
        Path(self.marker).touch()
        while True:
            if not self.swallow:
                continue
            try:
                time.sleep(0.01)
            except BaseException:
                pass


def _spinning_job(tmp_path: Path, swallow: bool, timeout_ms: int):
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "none")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    env.get_config().set_task_cancellation_interval(100)
    env.get_config().set_task_cancellation_timeout(timeout_ms)
    marker = tmp_path / "spinning"
    env.from_collection([1, 2, 3], type_info=Types.INT()).map(
        Spin(str(marker), swallow), output_type=Types.INT()
    ).print()
    client = env.execute_async("spinning")
    await_condition(marker.exists, "the map to start spinning")
    return client


def _task_manager_of(gateway: DispatcherGateway, job_id: str):
    (task,) = gateway.job_details(job_id).tasks
    (tm,) = [t for t in gateway.list_task_managers() if t.resource_id == task.resource_id]
    return tm


def _wait_terminal(gateway: DispatcherGateway, job_id: str) -> str:
    return await_condition(
        lambda: (
            (s := gateway.job_details(job_id).status) in ("CANCELED", "FAILED", "FINISHED") and s
        ),
        f"job {job_id} to end",
        timeout=60,
    )


def test_a_busy_loop_is_interrupted_and_the_job_is_canceled(cluster, tmp_path):
    client = _spinning_job(tmp_path, swallow=False, timeout_ms=60_000)
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        tm = _task_manager_of(gateway, job_id)
        client.cancel().result()
        assert _wait_terminal(gateway, job_id) == "CANCELED"
        # Interrupted, not killed: the TaskManager serves on.
        assert tm.resource_id in {t.resource_id for t in gateway.list_task_managers()}


def test_a_task_that_ignores_interrupts_ends_its_task_manager_and_the_next_job_runs(
    cluster, tmp_path
):
    client = _spinning_job(tmp_path, swallow=True, timeout_ms=2_000)
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        stuck = _task_manager_of(gateway, job_id)
        client.cancel().result()
        assert _wait_terminal(gateway, job_id) == "CANCELED"
        # The watchdog gave up on the task: its TaskManager process exited.
        await_condition(
            lambda: not Path(f"/proc/{stuck.pid}").exists(),
            f"TaskManager {stuck.resource_id} (pid {stuck.pid}) to exit",
            timeout=60,
        )
        await_condition(
            lambda: stuck.resource_id not in {t.resource_id for t in gateway.list_task_managers()},
            "the ResourceManager to drop the exited TaskManager",
            timeout=60,
        )
    # The next job runs, on a slot no old task holds.
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    got = (
        env.from_collection([1, 2, 3], type_info=Types.INT())
        .map(lambda x: x * 10, output_type=Types.INT())
        .execute_and_collect()
    )
    with got as results:
        assert sorted(results) == [10, 20, 30]
