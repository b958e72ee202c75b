"""DefaultSlotManager and HeartbeatMonitor with a fake clock and a recording launcher."""

from __future__ import annotations

import threading

import pytest

from weir.core.errors import SlotAllocationError
from weir.core.ids import JobId, ResourceId
from weir.resourcemanager.heartbeat_monitor import HeartbeatMonitor
from weir.resourcemanager.slot_manager import (
    DefaultSlotManager,
    SlotRequest,
    TaskManagerRegistration,
)


class FakeClock:
    __test__ = False

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TestingLauncher:
    __test__ = False

    def __init__(self, max_task_managers: int) -> None:
        self.max_task_managers = max_task_managers
        self.leases: list[str] = []

    def launch(self, lease_id: str) -> None:
        self.leases.append(lease_id)


def registration(n: int, lease_id: str = "", slots: int = 1) -> TaskManagerRegistration:
    return TaskManagerRegistration(
        ResourceId(f"tm{n}"),
        f"127.0.0.1:{1000 + n}",
        "127.0.0.1",
        2000 + n,
        slots,
        "spark task",
        100 + n,
        lease_id,
    )


def request(count: int, job: str = "job", timeout_ms: int = 0) -> SlotRequest:
    return SlotRequest(JobId(job), count, "jm:1", timeout_ms)


class TestDefaultSlotManager:
    def test_leases_the_minimum_at_start(self) -> None:
        launcher = TestingLauncher(4)
        manager = DefaultSlotManager(launcher, 1, min_task_managers=2)
        assert manager.ensure_minimum() == launcher.leases
        assert len(launcher.leases) == 2
        assert manager.ensure_minimum() == []  # pending leases count

    def test_serves_a_request_from_free_slots_spread_over_task_managers(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 2)
        manager.register(registration(1, slots=2))
        manager.register(registration(2, slots=2))
        slots = manager.reserve(request(2))
        assert {s.resource_id for s in slots} == {"tm1", "tm2"}
        assert len({s.allocation_id for s in slots}) == 2

    def test_a_request_that_can_never_be_met_fails_at_once(self) -> None:
        launcher = TestingLauncher(2)
        manager = DefaultSlotManager(launcher, 1)
        with pytest.raises(SlotAllocationError, match=r"asked for 3 slots.*at most 2 TaskManagers"):
            manager.reserve(request(3, timeout_ms=10**9))
        assert launcher.leases == []

    def test_leases_what_is_missing_and_waits_for_the_registration(self) -> None:
        launcher = TestingLauncher(3)
        manager = DefaultSlotManager(launcher, 1)
        manager.register(registration(1))
        result: list[object] = []
        waiter = threading.Thread(
            target=lambda: result.append(manager.reserve(request(2, timeout_ms=60_000)))
        )
        waiter.start()
        deadline = threading.Event()
        while not launcher.leases and not deadline.wait(0.01):
            pass
        assert len(launcher.leases) == 1  # one short: one lease, not up to the max
        manager.register(registration(2, lease_id=launcher.leases[0]))
        waiter.join(30)
        assert len(result[0]) == 2  # type: ignore[arg-type]

    def test_times_out_with_a_message_saying_what_to_do(self) -> None:
        launcher = TestingLauncher(1)
        manager = DefaultSlotManager(launcher, 1, clock=FakeClock())
        manager.register(registration(1))
        manager.reserve(request(1, job="a"))
        # Every slot is taken and none can be leased: the request waits out its timeout.
        with pytest.raises(SlotAllocationError, match=r"only 0 were free.*slot.request.timeout"):
            manager.reserve(request(1, job="b", timeout_ms=0))
        assert launcher.leases == []

    def test_freeing_slots_makes_them_available_again(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        manager.register(registration(1))
        first = manager.reserve(request(1, job="a"))
        freed = manager.free(JobId("a"))
        assert [a for a, _ in freed] == [first[0].allocation_id]
        # Not handed out before the TaskExecutor has let the slot go: it would refuse it.
        with pytest.raises(SlotAllocationError, match="only 0 were free"):
            manager.reserve(request(1, job="b", timeout_ms=0))
        manager.confirm_freed(ResourceId("tm1"), first[0].allocation_id)
        assert manager.reserve(request(1, job="b"))

    def test_a_heartbeat_learns_which_reported_slots_were_freed(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 2)
        manager.register(registration(1, slots=2))
        kept, freed = manager.reserve(request(2, job="a"))
        [(allocation_id, reg)] = manager.free(JobId("a"), [freed.allocation_id])
        reported = [kept.allocation_id, freed.allocation_id]
        # While the FreeSlot call is under way, the slot is neither held nor stale.
        assert manager.heartbeat(ResourceId("tm1"), reported) == []
        manager.confirm_freed(reg.resource_id, allocation_id)
        assert manager.heartbeat(ResourceId("tm1"), reported) == [freed.allocation_id]
        assert manager.heartbeat(ResourceId("tm9"), reported) is None

    def test_a_lost_task_manager_reports_the_job_masters_holding_its_slots(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 1)
        manager.register(registration(1, lease_id="L1"))
        slots = manager.reserve(request(1))
        assert manager.lease_ended("L1") == "tm1"
        assert manager.unregister(ResourceId("tm1")) == {"jm:1": [slots[0].allocation_id]}
        assert manager.task_managers() == []

    def test_a_lease_ending_during_its_release_is_not_a_loss(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 1)
        manager.register(registration(1, lease_id="L1"))
        assert manager.mark_releasing(ResourceId("tm1")) is not None
        assert manager.mark_releasing(ResourceId("tm1")) is None
        assert manager.lease_ended("L1") is None

    def test_idle_task_managers_beyond_the_minimum_are_released_after_the_timeout(self) -> None:
        clock = FakeClock()
        manager = DefaultSlotManager(
            TestingLauncher(3), 1, min_task_managers=1, idle_timeout_ms=1000, clock=clock
        )
        for n in (1, 2, 3):
            manager.register(registration(n))
        manager.reserve(request(1))
        assert manager.idle_task_managers() == []
        clock.now = 2.0
        idle = manager.idle_task_managers()
        # three live, one busy, min 1: both idle ones may go.
        assert len(idle) == 2
        for allocation_id, reg in manager.free(JobId("job")):
            manager.confirm_freed(reg.resource_id, allocation_id)
        clock.now = 10.0
        assert len(manager.idle_task_managers()) == 2  # the minimum stays

    def test_close_fails_waiting_requests(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        errors: list[BaseException] = []

        def wait() -> None:
            try:
                manager.reserve(request(1, timeout_ms=60_000))
            except SlotAllocationError as exc:
                errors.append(exc)

        waiter = threading.Thread(target=wait)
        waiter.start()
        manager.close()
        waiter.join(30)
        assert errors and "shutting down" in str(errors[0])


class TestHeartbeatMonitor:
    def test_reports_a_silent_target_once(self) -> None:
        clock = FakeClock()
        monitor: HeartbeatMonitor[str] = HeartbeatMonitor(1000, clock)
        monitor.monitor("a")
        monitor.monitor("b")
        clock.now = 0.8
        assert monitor.receive_heartbeat("b")
        clock.now = 1.5
        assert monitor.expired() == ["a"]
        assert monitor.expired() == []
        assert not monitor.receive_heartbeat("a")
        clock.now = 2.0
        assert monitor.expired() == ["b"]
