"""The TaskExecutor's responders, each alone, against a recording stand-in for the
JobMaster gateways (a unit test of one class)."""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import pytest

from weir.core.deployment import ExecutionState
from weir.core.errors import RemoteError, RemoteTimeoutError
from weir.core.ids import ExecutionAttemptId, JobId
from weir.taskmanager import job_master_responders as responders
from weir.taskmanager.job_master_responders import (
    CheckpointResponder,
    CollectResponder,
    EndOfData,
    JobMasterConnection,
    StateUpdate,
    TaskStateReporter,
)

ATTEMPT = ExecutionAttemptId("a" * 32)


class RecordingGateways:
    """Records every call; ``full`` pushes answer "retry after 1 ms" first."""

    def __init__(self, full: int = 0, fail: bool = False) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.full = full
        self.fail = fail

    def push_collect_batch(self, address: str, **kwargs: Any) -> int | None:
        self.calls.append(("push", kwargs))
        if self.full:
            self.full -= 1
            return 1
        return None

    def acknowledge_checkpoint(self, address: str, **kwargs: Any) -> None:
        self.calls.append(("ack", kwargs))
        if self.fail:
            raise RemoteError("JobMaster gone")

    def decline_checkpoint(self, address: str, **kwargs: Any) -> None:
        self.calls.append(("decline", kwargs))


class Tasks:
    def __init__(self, running: bool = True, cancel: bool = False) -> None:
        self.running = running
        self.cancel_requested = cancel

    def task(self, attempt_id: ExecutionAttemptId) -> Any:
        return self if self.running else None


def _connection(gateways: RecordingGateways) -> JobMasterConnection:
    return JobMasterConnection("127.0.0.1:1", JobId("j" * 32), gateways)


def test_collect_retries_while_the_buffer_is_full_then_delivers():
    gateways = RecordingGateways(full=3)
    CollectResponder(_connection(gateways), ATTEMPT, Tasks(), threading.Event()).collect(
        "op", 0, b"batch", False, 7
    )
    assert [name for name, _ in gateways.calls] == ["push"] * 4
    assert gateways.calls[-1][1]["epoch"] == 7


def test_collect_gives_up_quietly_for_a_cancelled_task():
    gateways = RecordingGateways(full=100)
    CollectResponder(_connection(gateways), ATTEMPT, Tasks(cancel=True), threading.Event()).collect(
        "op", 0, b"batch", False, 0
    )
    assert len(gateways.calls) == 1


def test_collect_fails_naming_the_reader_past_its_deadline(monkeypatch):
    monkeypatch.setattr(responders, "COLLECT_TIMEOUT_S", 0.0)
    gateways = RecordingGateways(full=100)
    responder = CollectResponder(_connection(gateways), ATTEMPT, Tasks(), threading.Event())
    with pytest.raises(RemoteTimeoutError, match="read the results iterator"):
        responder.collect("op", 0, b"batch", False, 0)


def test_a_lost_ack_of_an_ended_task_is_only_a_debug_line(caplog):
    gateways = RecordingGateways(fail=True)
    with caplog.at_level(logging.DEBUG):
        CheckpointResponder(_connection(gateways), Tasks(running=False)).acknowledge(
            ATTEMPT,
            3,
            None,
            None,  # type: ignore[arg-type]
        )
    (record,) = [r for r in caplog.records if "checkpoint 3" in r.getMessage()]
    assert record.levelname == "DEBUG"


def test_a_decline_names_the_checkpoint_and_reason():
    gateways = RecordingGateways()
    CheckpointResponder(_connection(gateways), Tasks()).decline(ATTEMPT, 4, "disk full")
    assert gateways.calls == [
        (
            "decline",
            {
                "job_id": "j" * 32,
                "attempt_id": ATTEMPT,
                "checkpoint_id": 4,
                "reason": "disk full",
                "timeout_s": responders.RPC_TIMEOUT_S,
            },
        )
    ]


def test_states_and_end_of_data_are_queued_in_order_and_an_end_releases_the_task():
    reports: queue.Queue[Any] = queue.Queue()
    ended: list[ExecutionAttemptId] = []
    reporter = TaskStateReporter(
        _connection(RecordingGateways()), reports, Tasks(running=False), ended.append
    )
    reporter.report_state(ATTEMPT, ExecutionState.RUNNING, None)
    reporter.end_of_data(ATTEMPT)
    reporter.report_state(ATTEMPT, ExecutionState.FINISHED, None)
    queued = [reports.get_nowait() for _ in range(3)]
    assert [type(q) for q in queued] == [StateUpdate, EndOfData, StateUpdate]
    assert queued[2].state is ExecutionState.FINISHED
    assert ended == [ATTEMPT]
