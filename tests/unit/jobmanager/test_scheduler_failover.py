"""How DefaultScheduler answers a task's failure: the restart strategy decides, unless the
failure is one no restart can cure (Flink's NonRecoverableError), which fails the job at
once; every failover goes into the job's exception history, saying whether it restarted."""

from __future__ import annotations

import threading

import pytest

from weir.core.deployment import ExecutionState
from weir.core.errors import CheckpointStorageUnavailableError
from weir.core.ids import AllocationId, ResourceId
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.core.throwable_classifier import ThrowableType
from weir.jobmanager.execution_graph import ExecutionGraph, SlotInfo
from weir.jobmanager.execution_slot_allocator import ExecutionSlotAllocator
from weir.jobmanager.scheduler import DefaultScheduler
from weir.jobmanager.task_canceller import TaskCanceller

RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "10",
    "restart-strategy.fixed-delay.delay": "0 ms",
}


def _scheduler(config: dict[str, str]) -> tuple[DefaultScheduler, list[JobStatus]]:
    vertex = JobVertex(
        "v", "Map", 2, 128, (OperatorDescriptor("op-v", "Map", OperatorKind.MAP, b""),), "default"
    )
    statuses: list[JobStatus] = []
    scheduler = DefaultScheduler(
        ExecutionGraph(JobGraph("job", "test", (vertex,), ()), 0),
        config,
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: None,
        on_status=statuses.append,
        security=SecurityConfig(),
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


@pytest.fixture
def restarts(monkeypatch) -> list[int]:
    """Restarts are recorded, not run; cancels are not sent."""
    started: list[int] = []
    monkeypatch.setattr(TaskCanceller, "_send_cancels", lambda self, targets: None)
    monkeypatch.setattr(ExecutionSlotAllocator, "release_slots", lambda self: None)
    monkeypatch.setattr(
        DefaultScheduler,
        "_restart",
        lambda self, old, targets, backoff_ms: started.append(old.attempt_number),
    )
    return started


def _attempts(scheduler: DefaultScheduler) -> list[str]:
    return [ev.current.attempt_id for ev in scheduler.graph.all_executions()]


TRACE = (
    "Traceback (most recent call last):\n"
    '  File "job.py", line 3, in map\n'
    "ValueError: the first line of the message\nand its second line\n"
)


def test_a_recoverable_failure_restarts_and_is_kept_in_the_history(restarts):
    scheduler, statuses = _scheduler(RESTARTS)
    first, _ = _attempts(scheduler)
    scheduler.update_task_state(first, ExecutionState.FAILED, TRACE)
    assert statuses == [JobStatus.RESTARTING]
    assert restarts == [0]
    (entry,) = scheduler.exception_history()
    assert entry.restarted
    assert entry.attempt_number == 0
    assert entry.task_name == "Map (1/2)"
    assert entry.resource_id == "tm0"
    assert entry.failure_cause.endswith(TRACE)
    assert entry.summary == "Map (1/2) failed: ValueError: the first line of the message"
    assert entry.timestamp_ms == scheduler.failure_ms


def test_a_non_recoverable_failure_fails_the_job_at_once_whatever_the_strategy(restarts):
    scheduler, statuses = _scheduler(RESTARTS)
    first, second = _attempts(scheduler)
    scheduler.update_task_state(
        first, ExecutionState.FAILED, TRACE, throwable_type=ThrowableType.NON_RECOVERABLE_ERROR
    )
    assert restarts == []
    assert statuses == [JobStatus.FAILING]
    scheduler.update_task_state(second, ExecutionState.CANCELED, None)
    assert statuses == [JobStatus.FAILING, JobStatus.FAILED]
    assert TRACE in scheduler.failure_cause
    (entry,) = scheduler.exception_history()
    assert not entry.restarted
    assert entry.non_recoverable


def test_the_history_holds_each_failover_oldest_first_with_the_final_one(restarts):
    scheduler, statuses = _scheduler({**RESTARTS, "restart-strategy.fixed-delay.attempts": "1"})
    scheduler.fail_over("RuntimeError: first")
    scheduler.status = JobStatus.RUNNING  # as the restart (not run here) leaves it
    scheduler.fail_over("RuntimeError: second")
    history = scheduler.exception_history()
    assert [(e.summary, e.restarted) for e in history] == [
        ("RuntimeError: first", True),
        ("RuntimeError: second", False),
    ]
    assert statuses == [JobStatus.RESTARTING, JobStatus.FAILING]


def test_a_failure_of_the_whole_job_is_kept_without_a_task(restarts):
    scheduler, _ = _scheduler(RESTARTS)
    scheduler.fail_over("CheckpointError: too many checkpoints failed\nin a row")
    (entry,) = scheduler.exception_history()
    assert entry.task_name == ""
    assert entry.summary == "CheckpointError: too many checkpoints failed"
    assert entry.restarted


PRODUCER_FAILED = (
    "Traceback (most recent call last):\n"
    '  File "task.py", line 1, in poll\n'
    "weir.core.errors.ProducerFailedError: the task producing this input failed\n"
)


def test_a_producers_failure_reported_after_its_consumers_is_the_root(restarts):
    scheduler, _ = _scheduler(RESTARTS)
    producer, consumer = _attempts(scheduler)
    scheduler.update_task_state(consumer, ExecutionState.FAILED, PRODUCER_FAILED)
    scheduler.update_task_state(producer, ExecutionState.FAILED, TRACE)
    (entry,) = scheduler.exception_history()
    assert entry.task_name == "Map (1/2)"
    assert entry.failure_cause == TRACE
    assert entry.restarted
    assert scheduler.failure_cause == f"Map (1/2) failed:\n{TRACE}"


def test_a_non_recoverable_failure_reported_during_a_restart_calls_it_off(restarts):
    scheduler, statuses = _scheduler(RESTARTS)
    first, second = _attempts(scheduler)
    scheduler.update_task_state(first, ExecutionState.FAILED, "RuntimeError: transient")
    assert statuses == [JobStatus.RESTARTING]
    scheduler.update_task_state(
        second, ExecutionState.FAILED, TRACE, throwable_type=ThrowableType.NON_RECOVERABLE_ERROR
    )
    assert statuses == [JobStatus.RESTARTING, JobStatus.FAILING, JobStatus.FAILED]
    (entry,) = scheduler.exception_history()
    assert (entry.task_name, entry.restarted, entry.non_recoverable) == ("Map (2/2)", False, True)
    assert TRACE in scheduler.failure_cause


class _UnreachableStorage:
    """A checkpoint coordinator whose storage does not answer (an S3 server that is down):
    every restore fails."""

    def abort_pending(self, reason: str) -> None:
        pass

    def stop_periodic_scheduler(self) -> None:
        pass

    def restore_latest(self):
        raise CheckpointStorageUnavailableError("cannot read checkpoint 3: connection refused")


def test_a_restore_the_checkpoint_storage_does_not_answer_restarts_again_until_the_strategy_ends(
    monkeypatch,
):
    real_restart = DefaultScheduler._restart
    started: list[int] = []
    monkeypatch.setattr(TaskCanceller, "_send_cancels", lambda self, targets: None)
    monkeypatch.setattr(
        DefaultScheduler,
        "_restart",
        lambda self, old, targets, backoff_ms: started.append(old.attempt_number),
    )
    scheduler, statuses = _scheduler({**RESTARTS, "restart-strategy.fixed-delay.attempts": "2"})
    scheduler.checkpoint_coordinator = _UnreachableStorage()  # type: ignore[assignment]
    scheduler.fail_over("CheckpointError: 1 consecutive checkpoints failed")
    for ev in scheduler.graph.all_executions():
        ev.current.transition(ExecutionState.CANCELED)  # as the tasks confirm
    assert started == [0]

    # The restore finds the storage down: not a failed job, nor an older checkpoint, but
    # another restart after the strategy's delay.
    real_restart(scheduler, scheduler.graph, [], 0)
    waited = threading.Event()
    for _ in range(6000):  # the next restart starts on a thread of its own
        if len(started) == 2:
            break
        waited.wait(0.01)
    assert started == [0, 0]
    assert scheduler.status is JobStatus.RESTARTING
    history = scheduler.exception_history()
    assert [e.restarted for e in history] == [True, True]
    assert history[1].summary.startswith("CheckpointStorageUnavailableError: cannot read")

    # Once the strategy allows no more, the job fails, saying why.
    real_restart(scheduler, scheduler.graph, [], 0)
    assert statuses[-1] in (JobStatus.FAILING, JobStatus.FAILED)
    assert "CheckpointStorageUnavailableError" in scheduler.failure_cause
    assert [e.restarted for e in scheduler.exception_history()] == [True, True, False]
