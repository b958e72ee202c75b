"""What a cancelled or stopped job reports, as Flink does, on the MiniCluster: every task
of a cancelled job ends CANCELED (a consumer whose producer was cancelled first is not
FAILED) and the job has no root exception; every task of a job stopped with a savepoint
ends FINISHED; and a job stays CANCELLING while the user code of a task still runs.
Checked over gRPC, REST and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from test_checkpoint_recovery import await_condition

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, WatermarkStrategy
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

TERMINAL = ("CANCELED", "FAILED", "FINISHED")


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def _keyed_job(name: str, checkpoints: bool = False) -> str:
    """Numbers at parallelism 2 through a HASH edge into a keyed sum; returns its id."""
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(2)
    if checkpoints:
        env.enable_checkpointing(200)
    (
        env.from_source(
            NumberSequenceSource(1, 10**12), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .key_by(lambda v: v % 4)
        .reduce(lambda a, b: a + b)
        .uid("sum")
        .filter(lambda v: False)
        .print()
    )
    return str(env.execute_async(name).get_job_id())


class StatusRecorder:
    """Every status of a job seen by polling its details until it ends."""

    def __init__(self, gateway: DispatcherGateway, job_id: str) -> None:
        self.seen: list[str] = []
        self._gateway = gateway
        self._job_id = job_id
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while True:
            status = self._gateway.job_details(self._job_id).status
            if not self.seen or self.seen[-1] != status:
                self.seen.append(status)
            if status in TERMINAL:
                return
            time.sleep(0.01)  # polling interval of the recorder, not a synchronisation

    def wait(self) -> list[str]:
        self._thread.join(120)
        assert not self._thread.is_alive(), f"the job did not end: {self.seen}"
        return self.seen


def _all_running(gateway: DispatcherGateway, job_id: str) -> bool:
    tasks = gateway.job_details(job_id).tasks
    return bool(tasks) and all(t.state == "RUNNING" for t in tasks)


def test_a_cancelled_job_ends_with_every_task_canceled_and_no_root_exception(cluster):
    job_id = _keyed_job("cancelled keyed job")
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: _all_running(gateway, job_id), "every task to run")
        recorder = StatusRecorder(gateway, job_id)
        cli = [sys.executable, "-m", "weir.client.cli"]
        cancelled = subprocess.run(
            [*cli, "cancel", "-m", cluster.address, job_id], capture_output=True, text=True
        )
        assert cancelled.returncode == 0, cancelled.stderr
        seen = recorder.wait()
        assert seen[-1] == "CANCELED", seen
        assert set(seen) <= {"RUNNING", "CANCELLING", "CANCELED"}, seen
        details = gateway.job_details(job_id)
        assert {t.task_name: t.state for t in details.tasks} == {
            t.task_name: "CANCELED" for t in details.tasks
        }
        assert len(details.tasks) == 4
        assert details.failure_cause == ""
        assert all(t.failure_cause == "" for t in details.tasks)
    url = cluster.rest_url
    job = _get(f"{url}/jobs/{job_id}")
    assert job["state"] == "CANCELED"
    for vertex in job["vertices"]:
        assert vertex["status"] == "CANCELED", vertex
        assert vertex["tasks"]["CANCELED"] == 2, vertex
    exceptions = _get(f"{url}/jobs/{job_id}/exceptions")
    assert exceptions["root-exception"] is None, exceptions["root-exception"]
    assert exceptions["all-exceptions"] == []
    listed = subprocess.run(
        [*cli, "list", "-a", "-m", cluster.address], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if job_id in line]
    assert "CANCELED" in line, line


def test_a_job_stopped_with_a_savepoint_ends_with_every_task_finished(cluster, tmp_path):
    job_id = _keyed_job("stopped keyed job", checkpoints=True)
    url = cluster.rest_url
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: _all_running(gateway, job_id), "every task to run")
        await_condition(
            lambda: _get(f"{url}/jobs/{job_id}/checkpoints")["counts"]["completed"] > 0,
            "a completed checkpoint",
        )
        recorder = StatusRecorder(gateway, job_id)
        stopped = subprocess.run(
            [
                *[sys.executable, "-m", "weir.client.cli"],
                *["stop", "-m", cluster.address, "--savepointPath", str(tmp_path), job_id],
            ],
            capture_output=True,
            text=True,
        )
        assert stopped.returncode == 0, stopped.stderr
        seen = recorder.wait()
        assert seen[-1] == "FINISHED", seen
        details = gateway.job_details(job_id)
        assert [t.state for t in details.tasks] == ["FINISHED"] * 4, details.tasks
        assert details.failure_cause == ""
    job = _get(f"{url}/jobs/{job_id}")
    assert [v["status"] for v in job["vertices"]] == ["FINISHED"] * len(job["vertices"])
    assert _get(f"{url}/jobs/{job_id}/exceptions")["root-exception"] is None


class SleepsThroughTheCancel(MapFunction):
    """Marks that it started, then blocks in one long C call (an interrupt reaches it only
    when the call returns), then marks that it woke."""

    def __init__(self, directory: str, sleep_s: float) -> None:
        self.directory = directory
        self.sleep_s = sleep_s

    def map(self, value):
        Path(self.directory, "asleep").touch()
        try:
            time.sleep(self.sleep_s)
        finally:
            Path(self.directory, "woke").touch()
        return value


@pytest.mark.long  # 17 s of user code by design
def test_a_cancelled_job_stays_cancelling_while_user_code_still_runs(cluster, tmp_path):
    """Flink keeps a job CANCELLING until every task has ended: here a task blocked in
    one C call past the JobMaster's old 15 s confirmation wait; the job is CANCELED only
    once the call returned and the task ended."""
    sleep_s = 17.0  # past what the JobMaster used to wait, under the cancellation timeout
    env = StreamExecutionEnvironment.get_execution_environment(Configuration())
    env.set_parallelism(1)
    env.get_config().set_task_cancellation_timeout(120_000)
    (
        env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), "n")
        .map(SleepsThroughTheCancel(str(tmp_path), sleep_s))
        .print()
    )
    job_id = str(env.execute_async("sleeps through its cancel").get_job_id())
    await_condition((tmp_path / "asleep").exists, "the map to fall asleep")
    with DispatcherGateway(cluster.address) as gateway:
        seen_before_waking: list[str] = []
        recorder = StatusRecorder(gateway, job_id)
        gateway.cancel_job(job_id)
        while not (tmp_path / "woke").exists():
            seen_before_waking.append(gateway.job_details(job_id).status)
            time.sleep(0.05)  # polling interval, not a synchronisation
        seen = recorder.wait()
    assert "CANCELLING" in seen_before_waking
    assert not set(seen_before_waking) & set(TERMINAL), seen_before_waking
    assert seen[-1] == "CANCELED", seen
