"""How DefaultScheduler ends a job: a cancelled job's tasks end CANCELED whatever they
report while being cancelled, a stopped job's FINISHED; the job waits for its tasks;
and with leader election the end waits for the verdict on leadership, a deposed
JobMaster's job ending SUSPENDED."""

from __future__ import annotations

import threading

import pytest

from weir.core.deployment import ExecutionState
from weir.core.ids import AllocationId, ResourceId
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.jobmanager.execution_graph import ExecutionGraph, SlotInfo
from weir.jobmanager.execution_slot_allocator import ExecutionSlotAllocator
from weir.jobmanager.scheduler import DefaultScheduler
from weir.jobmanager.task_canceller import TaskCanceller


class Leadership:
    """The answers a JobMaster would give: confirmed, revoked, or neither (in doubt)."""

    def __init__(self, confirmed: bool = True) -> None:
        self.confirmed = confirmed
        self.revoked = False
        self.asked = threading.Event()

    def confirm(self) -> bool:
        self.asked.set()
        return self.confirmed


def _scheduler(
    leadership: Leadership | None = None, config: dict[str, str] | None = None
) -> tuple[DefaultScheduler, list[JobStatus]]:
    vertex = JobVertex(
        "v", "v", 2, 128, (OperatorDescriptor("op-v", "v", OperatorKind.MAP, b""),), "default"
    )
    statuses: list[JobStatus] = []
    scheduler = DefaultScheduler(
        ExecutionGraph(JobGraph("job", "test", (vertex,), ()), 0),
        {"restart-strategy.type": "none", **(config or {})},
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: None,
        on_status=statuses.append,
        security=SecurityConfig(),
        confirm_leadership=leadership.confirm if leadership else None,
        leadership_revoked=(lambda: leadership.revoked) if leadership else lambda: False,
    )
    scheduler.status = JobStatus.RUNNING
    slots = [
        SlotInfo(AllocationId(f"a{i}"), ResourceId(f"tm{i}"), "127.0.0.1:1", "127.0.0.1", 1)
        for i in range(2)
    ]
    scheduler.graph.assign_slots(slots)
    for ev in scheduler.graph.all_executions():
        ev.current.transition(ExecutionState.RUNNING)
    return scheduler, statuses


@pytest.fixture(autouse=True)
def _no_rpcs(monkeypatch):
    """Cancels are recorded, not sent: the tasks' reports are what the tests give."""
    monkeypatch.setattr(TaskCanceller, "_send_cancels", lambda self, targets: None)
    monkeypatch.setattr(ExecutionSlotAllocator, "release_slots", lambda self: None)


def _attempts(scheduler: DefaultScheduler) -> list[str]:
    return [ev.current.attempt_id for ev in scheduler.graph.all_executions()]


def _states(scheduler: DefaultScheduler) -> list[ExecutionState]:
    return [ev.current.state for ev in scheduler.graph.all_executions()]


def test_a_task_failing_on_its_cancelled_input_ends_canceled_with_no_root_cause():
    scheduler, statuses = _scheduler()
    producer, consumer = _attempts(scheduler)
    scheduler.cancel()
    assert _states(scheduler) == [ExecutionState.CANCELING] * 2
    released = "PartitionReleasedError: result partition 1 was released before it finished"
    scheduler.update_task_state(consumer, ExecutionState.FAILED, released)
    scheduler.update_task_state(producer, ExecutionState.CANCELED, None)
    assert _states(scheduler) == [ExecutionState.CANCELED] * 2
    assert statuses == [JobStatus.CANCELLING, JobStatus.CANCELED]
    assert scheduler.failure_cause == ""
    assert all(not ev.current.failure_cause for ev in scheduler.graph.all_executions())


def test_a_report_sent_before_the_cancel_arrived_does_not_undo_it():
    scheduler, _ = _scheduler()
    first, _second = _attempts(scheduler)
    scheduler.cancel()
    assert scheduler.update_task_state(first, ExecutionState.RUNNING, None) is False
    assert _states(scheduler)[0] is ExecutionState.CANCELING


def test_a_failing_job_keeps_its_tasks_failures():
    scheduler, statuses = _scheduler()
    first, second = _attempts(scheduler)
    scheduler.update_task_state(first, ExecutionState.FAILED, "ValueError: bad record")
    scheduler.update_task_state(second, ExecutionState.FAILED, "ValueError: another")
    assert statuses == [JobStatus.FAILING, JobStatus.FAILED]
    assert _states(scheduler) == [ExecutionState.FAILED] * 2


def test_a_job_never_fails_without_a_cause():
    """A failure whose error said nothing (raised without a message) still fails the
    job with a cause that says what is known."""
    scheduler, statuses = _scheduler()
    scheduler.fail_over("")
    for attempt in _attempts(scheduler):
        scheduler.update_task_state(attempt, ExecutionState.CANCELED, None)
    assert statuses == [JobStatus.FAILING, JobStatus.FAILED]
    assert "no cause was recorded" in scheduler.failure_cause
    assert scheduler.details("127.0.0.1:1").failure_cause == scheduler.failure_cause
    assert scheduler.exception_history()[-1].failure_cause == scheduler.failure_cause


def test_every_task_of_a_job_stopped_with_a_savepoint_ends_finished():
    scheduler, statuses = _scheduler()
    first, second = _attempts(scheduler)
    scheduler.stop_after_savepoint()
    scheduler.update_task_state(first, ExecutionState.CANCELED, None)
    scheduler.update_task_state(second, ExecutionState.FAILED, "PartitionReleasedError: gone")
    assert _states(scheduler) == [ExecutionState.FINISHED] * 2
    assert statuses == [JobStatus.CANCELLING, JobStatus.FINISHED]


def test_the_wait_for_cancelled_tasks_follows_the_watchdog_settings():
    scheduler, _ = _scheduler(
        config={"task.cancellation.timeout": "180 s", "heartbeat.timeout": "50 s"}
    )
    assert scheduler._canceller._confirm_timeout_s is not None
    assert scheduler._canceller._confirm_timeout_s > 230
    unbounded, _ = _scheduler(config={"task.cancellation.timeout": "0"})
    assert unbounded._canceller._confirm_timeout_s is None


def _end_all(scheduler: DefaultScheduler) -> None:
    for attempt in _attempts(scheduler):
        scheduler.update_task_state(attempt, ExecutionState.FINISHED, None)


def test_with_leadership_confirmed_the_job_ends_in_its_status():
    leadership = Leadership(confirmed=True)
    scheduler, statuses = _scheduler(leadership)
    _end_all(scheduler)
    assert scheduler.wait_terminated(10)
    assert statuses == [JobStatus.FINISHED]


def test_a_revoked_leadership_ends_the_job_suspended_not_failed():
    leadership = Leadership(confirmed=False)
    leadership.revoked = True
    scheduler, statuses = _scheduler(leadership)
    first, second = _attempts(scheduler)
    scheduler.update_task_state(first, ExecutionState.FAILED, "ValueError: x")
    scheduler.update_task_state(second, ExecutionState.CANCELED, None)
    assert scheduler.wait_terminated(10)
    assert statuses == [JobStatus.FAILING, JobStatus.SUSPENDED]
    assert scheduler.status is JobStatus.SUSPENDED


def test_in_doubt_the_job_waits_for_the_verdict():
    leadership = Leadership(confirmed=False)
    scheduler, statuses = _scheduler(leadership)
    _end_all(scheduler)
    assert leadership.asked.wait(10)
    assert not scheduler.wait_terminated(0.5)  # still undecided: no end yet
    assert statuses == []
    leadership.revoked = True
    assert scheduler.wait_terminated(10)
    assert statuses == [JobStatus.SUSPENDED]
