"""DefaultScheduler's deployment: an attempt that fails mid-deployment leaves no task
waiting to be deployed, so neither a restart nor the job's end waits out the cancel
timeout for them."""

from __future__ import annotations

from weir.core.deployment import ExecutionState
from weir.core.ids import AllocationId, ResourceId
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.jobmanager.execution_graph import ExecutionGraph, SlotInfo
from weir.jobmanager.execution_slot_allocator import ExecutionSlotAllocator
from weir.jobmanager.scheduler import DefaultScheduler
from weir.jobmanager.task_canceller import TaskCanceller


def _scheduler(parallelism: int = 3) -> DefaultScheduler:
    vertex = JobVertex(
        "v",
        "v",
        parallelism,
        128,
        (OperatorDescriptor("op-v", "v", OperatorKind.MAP, b""),),
        "default",
    )
    graph = ExecutionGraph(JobGraph("job", "test", (vertex,), ()), 0)
    return DefaultScheduler(
        graph,
        {"restart-strategy.type": "none"},
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: None,
        on_status=lambda status: None,
        security=SecurityConfig(),
    )


def _slots(n: int) -> list[SlotInfo]:
    return [
        SlotInfo(AllocationId(f"a{i}"), ResourceId(f"tm{i}"), "127.0.0.1:1", "127.0.0.1", 1)
        for i in range(n)
    ]


def test_tasks_not_yet_deployed_are_cancelled_when_a_deployment_fails(monkeypatch):
    scheduler = _scheduler()
    scheduler.status = JobStatus.RUNNING
    deployed = []

    def deploy(ev):
        # The first deployment fails (its TaskManager is gone): the attempt is over.
        deployed.append(ev)
        with scheduler._lock:
            ev.current.transition(ExecutionState.FAILED)
            scheduler.status = JobStatus.RESTARTING
        return False

    monkeypatch.setattr(scheduler, "_deploy", deploy)
    scheduler._slot_allocator._slot_pool.add(_slots(3))
    scheduler._allocate_and_deploy()

    states = [ev.current.state for ev in scheduler.graph.all_executions()]
    assert len(deployed) == 1
    assert states == [ExecutionState.FAILED, ExecutionState.CANCELED, ExecutionState.CANCELED]


def test_a_task_manager_that_cannot_be_reached_is_not_reused_by_the_restart(monkeypatch):
    from weir.core.errors import ServiceUnavailableError

    scheduler = _scheduler()
    scheduler.status = JobStatus.RUNNING
    scheduler.graph.assign_slots(_slots(3))

    def unreachable(address, tdd, jobmaster_address, timeout_s):
        msg = f"TaskExecutor.SubmitTask to {address} failed (UNAVAILABLE): connection refused"
        raise ServiceUnavailableError(msg)

    monkeypatch.setattr(scheduler._task_executors, "submit_task", unreachable)
    first = scheduler.graph.all_executions()[0]
    assert scheduler._deploy(first) is False
    assert first.current.state is ExecutionState.FAILED
    assert scheduler._slot_allocator._lost_task_managers == {"tm0"}


class _RestoringCoordinator:
    """Stands in for the CheckpointCoordinator at a restart: checkpoint 7 is the latest."""

    def abort_pending(self, reason):
        pass

    def stop_periodic_scheduler(self):
        pass

    def restore_latest(self):
        from types import SimpleNamespace

        return SimpleNamespace(checkpoint_id=7, metadata=SimpleNamespace(operator_states={}))


def test_a_restart_announces_the_new_attempt_and_deploys_it_with_the_restored_id(monkeypatch):
    restarts = []
    scheduler = _scheduler()
    scheduler._on_restart = restarts.append
    scheduler.checkpoint_coordinator = _RestoringCoordinator()
    scheduler.status = JobStatus.RESTARTING
    scheduler._slot_allocator._slot_pool.add(_slots(3))  # the restart reuses them
    scheduler.graph.assign_slots(scheduler._slot_allocator._slot_pool.slots)
    old = scheduler.graph
    old_attempt = old.all_executions()[0].current.attempt_id
    for ev in old.all_executions():
        ev.current.transition(ExecutionState.CANCELED)
    assert scheduler.attempt_number_of(old_attempt) == 0

    submitted = []

    def submit(address, tdd, jobmaster_address, timeout_s):
        submitted.append(tdd)

    monkeypatch.setattr(scheduler._task_executors, "submit_task", submit)
    monkeypatch.setattr(scheduler._slot_allocator, "release_slots", lambda: None)
    scheduler._restart(old, [], 0)

    assert restarts == [1]
    assert scheduler.attempt_number_of(old_attempt) is None  # its pushes are stale now
    new_attempt = scheduler.graph.all_executions()[0].current.attempt_id
    assert scheduler.attempt_number_of(new_attempt) == 1
    assert [tdd.restored_checkpoint_id for tdd in submitted] == [7, 7, 7]


def test_a_task_failing_while_others_wait_to_be_deployed_fails_the_job_at_once(monkeypatch):
    """A user error in the first task reaches the JobMaster while the attempt is still
    being deployed: the tasks not deployed yet end CANCELED at once (Flink cancels a
    SCHEDULED execution without asking a TaskManager), so the job is FAILED as soon as the
    deployed ones confirm. Before, the last of them waited, CANCELING, for a confirmation
    no TaskManager would ever send (task.cancellation.timeout and more, minutes)."""
    scheduler = _scheduler(parallelism=4)
    scheduler.status = JobStatus.RUNNING
    cancels: list[list[tuple[str, str]]] = []
    monkeypatch.setattr(TaskCanceller, "_send_cancels", lambda self, t: cancels.append(t))
    monkeypatch.setattr(ExecutionSlotAllocator, "release_slots", lambda self, slots=None: None)
    submitted: list[str] = []

    def submit_task(address, tdd, jobmaster_address, timeout_s):
        submitted.append(tdd.execution_attempt_id)
        if len(submitted) == 2:  # the first task's failure arrives meanwhile
            scheduler.update_task_state(submitted[0], ExecutionState.FAILED, "ValueError: key")

    monkeypatch.setattr(scheduler._task_executors, "submit_task", submit_task)
    scheduler._slot_allocator._slot_pool.add(_slots(4))
    scheduler._allocate_and_deploy()

    states = [ev.current.state for ev in scheduler.graph.all_executions()]
    assert states == [
        ExecutionState.FAILED,
        ExecutionState.CANCELING,  # deployed: its TaskManager confirms
        ExecutionState.CANCELED,
        ExecutionState.CANCELED,
    ]
    assert [attempt for attempt, _ in cancels[0]] == [submitted[1]]
    scheduler.update_task_state(submitted[1], ExecutionState.CANCELED, None)
    assert scheduler.status is JobStatus.FAILED
