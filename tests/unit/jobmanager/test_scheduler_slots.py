"""DefaultScheduler's slots across restarts, as Flink's JobMaster keeps them in its slot
pool: a restart keeps every slot it may deploy into again and asks the ResourceManager
only for what is missing. A TaskManager lost takes its slots with it (one replaced, the
survivors kept); a slot whose old task did not confirm its cancellation is given back
and replaced, never deployed into again."""

from __future__ import annotations

import threading

import pytest

from weir.core.deployment import ExecutionState
from weir.core.ids import AllocationId, ResourceId
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.jobmanager import scheduler as scheduler_module
from weir.jobmanager.execution_graph import ExecutionGraph, SlotInfo
from weir.jobmanager.scheduler import DefaultScheduler
from weir.jobmanager.task_canceller import cancel_targets

RESTART_AT_ONCE = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "3",
    "restart-strategy.fixed-delay.delay": "0 ms",
}


def slot(n: int) -> SlotInfo:
    """Slot ``a<n>`` on TaskManager ``tm<n>``, each TaskManager at an address of its own."""
    return SlotInfo(
        AllocationId(f"a{n}"), ResourceId(f"tm{n}"), f"127.0.0.1:{1000 + n}", "127.0.0.1", 1
    )


class TestingResourceManager:
    """Offers each request's slots at once (``slot(n)`` for the next n); records the
    requests and releases."""

    __test__ = False

    def __init__(self) -> None:
        self.scheduler: DefaultScheduler | None = None
        self.requests: list[int] = []
        self.released: list[list[str]] = []
        self.next_slot = 0
        # Called before an offer: what happens while a request waits.
        self.meanwhile = lambda: None

    def request_slots(self, address: str, *, request_id: str, count: int, **_: object) -> int:
        assert self.scheduler is not None
        self.requests.append(count)
        self.meanwhile()
        offered = [slot(self.next_slot + i) for i in range(count)]
        self.next_slot += count
        accepted, message = self.scheduler.offer_slots(request_id, offered)
        assert accepted, message
        return 0

    def release_slots(
        self, address: str, *, job_id: str, rpc_timeout_s: float, allocation_ids: tuple = ()
    ) -> None:
        self.released.append(sorted(allocation_ids))

    def cancel_slot_request(self, address: str, **_: object) -> None:
        return None

    def close(self) -> None:
        pass


class TestingTaskExecutors:
    """Records deployments; a cancel is confirmed by the task at once unless its address
    is in ``silent`` (a task that ignores it)."""

    __test__ = False

    def __init__(self) -> None:
        self.scheduler: DefaultScheduler | None = None
        self.deployed: list[tuple[int, str]] = []  # (attempt number, address)
        self.silent: set[str] = set()
        self.all_deployed = threading.Event()
        self.expected = 0

    def submit_task(self, address: str, tdd, jobmaster_address: str, timeout_s: float) -> None:
        self.deployed.append((tdd.attempt_number, address))
        if len(self.deployed) >= self.expected:
            self.all_deployed.set()

    def cancel_tasks(self, targets, timeout_s: float) -> list:
        assert self.scheduler is not None
        for attempt_id, address in targets:
            if address not in self.silent:
                self.scheduler.update_task_state(attempt_id, ExecutionState.CANCELED, None)
        return []

    def forget(self, address: str) -> None:
        pass

    def close(self) -> None:
        pass


def _scheduler(
    parallelism: int = 2, config: dict[str, str] | None = None
) -> tuple[DefaultScheduler, TestingResourceManager, TestingTaskExecutors]:
    vertex = JobVertex(
        "v",
        "v",
        parallelism,
        128,
        (OperatorDescriptor("op-v", "v", OperatorKind.MAP, b""),),
        "default",
    )
    scheduler = DefaultScheduler(
        ExecutionGraph(JobGraph("job", "test", (vertex,), ()), 0),
        {**RESTART_AT_ONCE, **(config or {})},
        jobmaster_address=lambda: "127.0.0.1:1",
        resource_manager_address=lambda: "127.0.0.1:2",
        on_status=lambda status: None,
        security=SecurityConfig(),
    )
    rm, executors = TestingResourceManager(), TestingTaskExecutors()
    rm.scheduler = executors.scheduler = scheduler
    scheduler._slot_allocator._resource_manager = rm  # type: ignore[assignment]
    scheduler._task_executors = executors  # type: ignore[assignment]
    scheduler._canceller._task_executors = executors  # type: ignore[assignment]
    return scheduler, rm, executors


def _run_first_attempt(
    scheduler: DefaultScheduler, executors: TestingTaskExecutors
) -> list[tuple[int, str]]:
    executors.expected = len(scheduler.graph.all_executions())
    scheduler.status = JobStatus.RUNNING
    scheduler._allocate_and_deploy()
    for ev in scheduler.graph.all_executions():
        scheduler.update_task_state(ev.current.attempt_id, ExecutionState.RUNNING, None)
    first = list(executors.deployed)
    executors.deployed.clear()
    executors.all_deployed.clear()
    return first


def _fail_attempt(scheduler: DefaultScheduler, states: dict[str, ExecutionState]) -> None:
    """End the current attempt's tasks as given per TaskManager (the rest CANCELED) and
    mark the job RESTARTING, as _fail_over does before its restart thread runs."""
    with scheduler._lock:
        for ev in scheduler.graph.all_executions():
            assert ev.current.slot is not None
            state = states.get(ev.current.slot.resource_id, ExecutionState.CANCELED)
            ev.current.transition(state)
        scheduler.status = JobStatus.RESTARTING


def test_a_lost_task_manager_is_replaced_by_one_slot_and_the_survivor_is_kept() -> None:
    scheduler, rm, executors = _scheduler()
    assert {address for _, address in _run_first_attempt(scheduler, executors)} == {
        "127.0.0.1:1000",
        "127.0.0.1:1001",
    }
    executors.expected = 2

    scheduler.task_manager_lost("tm0", "its Spark job ended")

    assert executors.all_deployed.wait(30), "the restart did not deploy"
    assert rm.requests == [2, 1]  # the survivor's slot is kept: one asked for
    assert rm.released == []  # the lost slot went with its TaskManager
    assert sorted(executors.deployed) == [(1, "127.0.0.1:1001"), (1, "127.0.0.1:1002")]
    assert scheduler.status is JobStatus.RUNNING


def test_a_restart_after_a_task_failure_keeps_every_slot_and_asks_for_none() -> None:
    scheduler, rm, executors = _scheduler()
    _run_first_attempt(scheduler, executors)
    executors.expected = 2
    old = scheduler.graph
    _fail_attempt(scheduler, {"tm0": ExecutionState.FAILED})

    scheduler._restart(old, [], 0)

    assert rm.requests == [2]
    assert rm.released == []
    assert sorted(executors.deployed) == [(1, "127.0.0.1:1000"), (1, "127.0.0.1:1001")]


def test_a_slot_whose_task_did_not_confirm_its_cancellation_is_given_back_and_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The task on tm1 ignores its cancel: its slot may still run it, so the next attempt
    gets a new slot in its place and tm1's is released; tm0's slot, whose task ended,
    is kept."""
    monkeypatch.setattr(scheduler_module, "CANCEL_CONFIRM_TIMEOUT_S", 0.0)
    scheduler, rm, executors = _scheduler()
    _run_first_attempt(scheduler, executors)
    executors.expected = 2
    executors.silent = {"127.0.0.1:1001"}
    old = scheduler.graph
    with scheduler._lock:
        (tm0_task,) = [ev for ev in old.all_executions() if ev.current.slot.resource_id == "tm0"]
        tm0_task.current.transition(ExecutionState.FAILED)
        scheduler.status = JobStatus.RESTARTING
    targets = cancel_targets(scheduler.graph)

    scheduler._restart(old, targets, 0)

    assert rm.released == [["a1"]]
    assert rm.requests == [2, 1]
    assert sorted(executors.deployed) == [(1, "127.0.0.1:1000"), (1, "127.0.0.1:1002")]


def test_a_task_manager_that_could_not_be_reached_gives_its_slot_back_and_is_replaced() -> None:
    """A deployment found tm1 unreachable before the ResourceManager declared it lost:
    its slot is released (the ResourceManager may still count it as the job's) and
    replaced."""
    scheduler, rm, executors = _scheduler()
    _run_first_attempt(scheduler, executors)
    executors.expected = 2
    old = scheduler.graph
    _fail_attempt(scheduler, {"tm1": ExecutionState.FAILED})
    with scheduler._lock:
        scheduler._slot_allocator._lost_task_managers.add("tm1")
        scheduler._slot_allocator._lost_addresses.add("127.0.0.1:1001")

    scheduler._restart(old, [], 0)

    assert rm.released == [["a1"]]
    assert rm.requests == [2, 1]
    assert sorted(executors.deployed) == [(1, "127.0.0.1:1000"), (1, "127.0.0.1:1002")]


def test_a_kept_slot_lost_while_the_restart_waits_for_slots_is_asked_for_again() -> None:
    """tm0 is lost and the restart asks for one slot; while it waits, tm1 (the survivor)
    is lost too: the attempt is deployed on two new slots, never on a lost one."""
    scheduler, rm, executors = _scheduler()
    _run_first_attempt(scheduler, executors)
    executors.expected = 2
    rm.meanwhile = lambda: (
        scheduler.task_manager_lost("tm1", "lost too") if rm.requests == [2, 1] else None
    )

    scheduler.task_manager_lost("tm0", "its Spark job ended")

    assert executors.all_deployed.wait(30), "the restart did not deploy"
    assert rm.requests == [2, 1, 1]
    assert sorted(executors.deployed) == [(1, "127.0.0.1:1002"), (1, "127.0.0.1:1003")]


def test_an_offer_of_another_count_than_the_request_is_refused() -> None:
    scheduler, rm, executors = _scheduler()
    _run_first_attempt(scheduler, executors)
    old = scheduler.graph
    _fail_attempt(scheduler, {"tm0": ExecutionState.FAILED})
    with scheduler._lock:
        scheduler._slot_allocator._lost_task_managers.add("tm0")
    offers: list[tuple[bool, str]] = []

    def request_slots(address: str, *, request_id: str, count: int, **_: object) -> int:
        rm.requests.append(count)
        offers.append(scheduler.offer_slots(request_id, [slot(7), slot(8)]))
        offers.append(scheduler.offer_slots(request_id, [slot(9)]))
        return 0

    rm.request_slots = request_slots  # type: ignore[method-assign]
    executors.expected = 2
    scheduler._restart(old, [], 0)

    (refused, why), (taken, _) = offers
    assert (refused, taken) == (False, True)
    assert "asked for 1 slots" in why and "2 were offered" in why
    assert sorted(executors.deployed) == [(1, "127.0.0.1:1001"), (1, "127.0.0.1:1009")]
