"""DefaultSlotManager and HeartbeatMonitor with a fake clock and a recording launcher."""

from __future__ import annotations

import pytest

from weir.core.errors import SlotAllocationError
from weir.core.ids import JobId, ResourceId
from weir.resourcemanager.heartbeat_monitor import HeartbeatMonitor
from weir.resourcemanager.slot_manager import (
    DefaultSlotManager,
    SlotAssignment,
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


def request(count: int, job: str = "job", timeout_ms: int = 60_000) -> SlotRequest:
    return SlotRequest(JobId(job), count, "jm:1", timeout_ms, request_id=f"r-{job}")


def reserve(manager: DefaultSlotManager, req: SlotRequest) -> list[SlotAssignment]:
    """Queue ``req`` and return the slots it got at once; [] while it stays queued."""
    manager.request(req)
    grants = {g.request.job_id: g for g in manager.match()}
    grant = grants.get(req.job_id)
    return list(grant.slots) if grant else []


class TestDefaultSlotManager:
    def test_leases_the_minimum_at_start(self) -> None:
        launcher = TestingLauncher(4)
        manager = DefaultSlotManager(launcher, 1, min_task_managers=2)
        assert manager.ensure_minimum() == launcher.leases
        assert len(launcher.leases) == 2
        assert manager.ensure_minimum() == []  # pending leases count

    def test_leases_nothing_while_its_resource_manager_does_not_lead(self) -> None:
        launcher = TestingLauncher(4)
        manager = DefaultSlotManager(launcher, 1, min_task_managers=2)
        manager.register(registration(1))
        manager.set_leading(False)
        assert manager.ensure_minimum() == []
        assert reserve(manager, request(3)) == []  # queued, but no lease for it
        assert manager.match() == []
        assert launcher.leases == []
        manager.set_leading(True)
        assert len(manager.ensure_minimum()) == 1  # the minimum, with one registered
        manager.match()  # and what the queued request still needs, up to the max
        assert len(launcher.leases) == 2

    def test_serves_a_request_from_free_slots_spread_over_task_managers(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 2)
        manager.register(registration(1, slots=2))
        manager.register(registration(2, slots=2))
        slots = reserve(manager, request(2))
        assert {s.resource_id for s in slots} == {"tm1", "tm2"}
        assert len({s.allocation_id for s in slots}) == 2

    def test_a_request_that_can_never_be_met_fails_at_once(self) -> None:
        launcher = TestingLauncher(2)
        manager = DefaultSlotManager(launcher, 1)
        with pytest.raises(SlotAllocationError, match=r"asked for 3 slots.*at most 2 TaskManagers"):
            manager.request(request(3, timeout_ms=10**9))
        assert launcher.leases == []
        assert manager.queued_requests == 0

    def test_leases_what_is_missing_and_serves_the_request_once_it_registered(self) -> None:
        launcher = TestingLauncher(3)
        manager = DefaultSlotManager(launcher, 1)
        manager.register(registration(1))
        assert reserve(manager, request(2)) == []  # queued, answered at once
        assert len(launcher.leases) == 1  # one short: one lease, not up to the max
        manager.register(registration(2, lease_id=launcher.leases[0]))
        [grant] = manager.match()
        assert len(grant.slots) == 2
        assert manager.queued_requests == 0

    def test_queued_requests_are_served_in_the_order_they_arrived(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 1)
        manager.register(registration(1))
        manager.register(registration(2))
        assert len(reserve(manager, request(2, job="holder"))) == 2
        for job in ("a", "b", "c", "d"):
            assert manager.request(request(1, job=job)) == "abcd".index(job)
        served: list[str] = []
        for _ in range(4):
            # One slot frees at a time: the oldest waiting request gets it.
            freed = manager.free(JobId(served[-1] if served else "holder"))
            for allocation_id, reg in freed[:1]:
                manager.confirm_freed(reg.resource_id, allocation_id)
            served += [g.request.job_id for g in manager.match()]
        assert served == ["a", "b", "c", "d"]

    def test_a_large_request_is_not_overtaken_by_smaller_ones_behind_it(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 1)
        manager.register(registration(1))
        manager.register(registration(2))
        reserve(manager, request(1, job="holder"))
        manager.request(request(2, job="big"))
        manager.request(request(1, job="small"))
        assert manager.match() == []  # one slot is free, but "big" came first
        for allocation_id, reg in manager.free(JobId("holder")):
            manager.confirm_freed(reg.resource_id, allocation_id)
        assert [g.request.job_id for g in manager.match()] == ["big"]

    def test_a_cancelled_request_says_why_it_was_not_met(self) -> None:
        launcher = TestingLauncher(1)
        clock = FakeClock()
        manager = DefaultSlotManager(launcher, 1, clock=clock)
        manager.register(registration(1))
        reserve(manager, request(1, job="a"))
        manager.request(request(1, job="b"))
        clock.now = 2.5
        message = manager.cancel(JobId("b"), "r-b")
        assert message is not None
        assert "only 0 were free after 2500 ms" in message
        assert "slot.request.timeout" in message
        assert manager.cancel(JobId("b"), "r-b") is None  # not queued any more
        assert launcher.leases == []

    def test_leases_that_fail_to_start_pause_leasing_and_are_named_to_the_request(
        self,
    ) -> None:
        launcher = TestingLauncher(2)
        clock = FakeClock()
        manager = DefaultSlotManager(
            launcher,
            1,
            min_task_managers=1,
            max_start_failures_per_minute=2,
            start_retry_interval_ms=3000,
            clock=clock,
        )
        manager.request(request(1))
        assert manager.lease_ended(launcher.leases[-1], "ModuleNotFoundError: x") is None
        assert manager.match() == []
        assert len(launcher.leases) == 2  # one failure: leased again at once
        manager.lease_ended(launcher.leases[-1], "ModuleNotFoundError: y")
        manager.match()
        manager.ensure_minimum()
        assert len(launcher.leases) == 2  # two in a minute: leasing waits
        clock.now = 2.9
        manager.match()
        assert len(launcher.leases) == 2
        clock.now = 3.0
        manager.match()
        assert len(launcher.leases) == 3  # the retry interval is over
        manager.request(request(1, job="b"))
        message = manager.cancel(JobId("b"), "r-b")
        assert message is not None
        assert "2 leases in the last minute ended before their TaskManager registered" in message
        assert "the last with: ModuleNotFoundError: y" in message
        assert "slot.request.timeout" not in message  # waiting longer would not help
        clock.now = 61.0  # the failures are over a minute old
        manager.request(request(1, job="c"))
        message = manager.cancel(JobId("c"), "r-c")
        assert message is not None
        assert "ended before" not in message
        assert "slot.request.timeout" in message

    def test_a_lease_ending_after_its_task_manager_registered_is_no_start_failure(
        self,
    ) -> None:
        launcher = TestingLauncher(2)
        manager = DefaultSlotManager(launcher, 1, max_start_failures_per_minute=1)
        manager.request(request(2))
        first, second = launcher.leases
        manager.register(registration(1, lease_id=first))
        assert manager.lease_ended(first, "cancelled") == "tm1"
        manager.unregister(ResourceId("tm1"))
        manager.match()
        assert len(launcher.leases) == 3  # replaced at once: no failure counted
        manager.lease_ended(second, None)  # returned without registering: a failure
        manager.match()
        assert len(launcher.leases) == 3
        message = manager.cancel(JobId("job"), "r-job")
        assert message is not None
        assert "the last with: its Spark task returned before it registered" in message

    def test_requests_past_their_timeout_leave_the_queue(self) -> None:
        clock = FakeClock()
        manager = DefaultSlotManager(TestingLauncher(1), 1, clock=clock)
        manager.request(request(1, job="a", timeout_ms=1000))
        manager.request(request(1, job="b", timeout_ms=5000))
        clock.now = 2.0
        assert [r.job_id for r in manager.expire()] == ["a"]
        assert manager.queued_requests == 1

    def test_a_grant_that_could_not_be_delivered_goes_back_to_its_place(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        manager.register(registration(1))
        manager.request(request(1, job="a"))
        manager.request(request(1, job="b"))
        [grant] = manager.match()
        for allocation_id, reg in manager.free(JobId("a")):
            manager.confirm_freed(reg.resource_id, allocation_id)
        manager.requeue(grant)
        assert [g.request.job_id for g in manager.match()] == ["a"]

    def test_freeing_slots_makes_them_available_again(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        manager.register(registration(1))
        first = reserve(manager, request(1, job="a"))
        freed = manager.free(JobId("a"))
        assert [a for a, _ in freed] == [first[0].allocation_id]
        # Not handed out before the TaskExecutor has let the slot go: it would refuse it.
        assert reserve(manager, request(1, job="b")) == []
        manager.confirm_freed(ResourceId("tm1"), first[0].allocation_id)
        assert [g.request.job_id for g in manager.match()] == ["b"]

    def test_a_heartbeat_learns_which_reported_slots_were_freed(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 2)
        manager.register(registration(1, slots=2))
        kept, freed = reserve(manager, request(2, job="a"))
        [(allocation_id, reg)] = manager.free(JobId("a"), [freed.allocation_id])
        reported = [kept.allocation_id, freed.allocation_id]
        # While the FreeSlot call is under way, the slot is neither held nor stale.
        assert manager.heartbeat(ResourceId("tm1"), reported) == []
        manager.confirm_freed(reg.resource_id, allocation_id)
        assert manager.heartbeat(ResourceId("tm1"), reported) == [freed.allocation_id]
        assert manager.heartbeat(ResourceId("tm9"), reported) is None

    def test_a_releasing_slot_is_free_once_its_task_executor_stops_reporting_it(self) -> None:
        """A FreeSlot that found tasks still ending leaves the slot taken; a heartbeat that
        no longer reports it (the tasks ended, the NotifySlotAvailable lost) frees it."""
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        manager.register(registration(1, slots=1))
        (slot,) = reserve(manager, request(1, job="a"))
        manager.free(JobId("a"), [slot.allocation_id])
        assert manager.free_slot_count() == 0
        manager.heartbeat(ResourceId("tm1"), [slot.allocation_id])  # still releasing
        assert manager.free_slot_count() == 0
        manager.heartbeat(ResourceId("tm1"), [])
        assert manager.free_slot_count() == 1

    def test_a_lost_task_manager_reports_the_job_masters_holding_its_slots(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(2), 1)
        manager.register(registration(1, lease_id="L1"))
        slots = reserve(manager, request(1))
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
        reserve(manager, request(1))
        assert manager.idle_task_managers() == []
        clock.now = 2.0
        idle = manager.idle_task_managers()
        # three live, one busy, min 1: both idle ones may go.
        assert len(idle) == 2
        for allocation_id, reg in manager.free(JobId("job")):
            manager.confirm_freed(reg.resource_id, allocation_id)
        clock.now = 10.0
        assert len(manager.idle_task_managers()) == 2  # the minimum stays

    def test_idle_task_managers_are_kept_while_a_queued_request_waits_for_their_slots(
        self,
    ) -> None:
        """A request waits for more slots than are free (a lease is under way): the free
        ones are its, however long the lease takes, and are not released as idle."""
        clock = FakeClock()
        launcher = TestingLauncher(3)
        manager = DefaultSlotManager(launcher, 1, idle_timeout_ms=1000, clock=clock)
        manager.register(registration(1))
        manager.request(request(2))
        assert manager.match() == []
        assert len(launcher.leases) == 1
        clock.now = 60.0  # the new TaskManager takes long to register
        assert manager.idle_task_managers() == []
        manager.register(registration(2, lease_id=launcher.leases[0]))
        [grant] = manager.match()
        assert {s.resource_id for s in grant.slots} == {"tm1", "tm2"}

    def test_only_idle_task_managers_beyond_what_the_queue_asks_for_are_released(self) -> None:
        clock = FakeClock()
        manager = DefaultSlotManager(TestingLauncher(3), 1, idle_timeout_ms=1000, clock=clock)
        for n in (1, 2, 3):
            manager.register(registration(n))
        clock.now = 5.0
        # Queued and not yet matched: two of the three free slots are spoken for.
        manager.request(request(2))
        assert manager.idle_task_managers() == ["tm1"]
        assert [len(g.slots) for g in manager.match()] == [2]
        assert len(manager.idle_task_managers()) == 1

    def test_a_withdrawn_request_leaves_the_task_managers_it_kept_idle(self) -> None:
        clock = FakeClock()
        manager = DefaultSlotManager(TestingLauncher(2), 1, idle_timeout_ms=1000, clock=clock)
        manager.register(registration(1))
        manager.request(request(2))
        clock.now = 5.0
        assert manager.idle_task_managers() == []
        assert manager.cancel(JobId("job"), "r-job") is not None
        assert manager.idle_task_managers() == ["tm1"]

    def test_a_slot_being_freed_counts_for_a_request_and_is_not_leased_for(self) -> None:
        """A job gives a slot back and asks for slots again before the FreeSlot call has
        returned (a restart): that slot is free a moment later, so only what the request
        needs beyond it is leased."""
        launcher = TestingLauncher(4)
        manager = DefaultSlotManager(launcher, 1)
        manager.register(registration(1))
        manager.register(registration(2))
        reserve(manager, request(2))
        manager.unregister(ResourceId("tm1"))  # lost, with one of the job's slots
        [(allocation_id, reg)] = manager.free(JobId("job"))
        manager.request(request(2))
        assert manager.match() == []
        assert len(launcher.leases) == 1
        manager.confirm_freed(reg.resource_id, allocation_id)
        assert manager.match() == []  # one free, two wanted: the lease is still due
        manager.register(registration(3, lease_id=launcher.leases[0]))
        [grant] = manager.match()
        assert {s.resource_id for s in grant.slots} == {"tm2", "tm3"}
        assert len(launcher.leases) == 1

    def test_a_slot_whose_tasks_are_still_ending_is_leased_for(self) -> None:
        """The FreeSlot call found tasks still in the slot (RELEASING): it may stay taken
        for long, so a request is not left waiting for it."""
        launcher = TestingLauncher(4)
        manager = DefaultSlotManager(launcher, 1)
        manager.register(registration(1))
        (slot,) = reserve(manager, request(1, job="a"))
        manager.free(JobId("a"))
        manager.slot_releasing(ResourceId("tm1"), slot.allocation_id)
        assert manager.free_slot_count() == 0
        manager.request(request(1, job="b"))
        assert len(launcher.leases) == 1

    def test_a_request_counting_on_a_slot_that_turns_out_releasing_leases_then(self) -> None:
        launcher = TestingLauncher(4)
        manager = DefaultSlotManager(launcher, 1)
        manager.register(registration(1))
        (slot,) = reserve(manager, request(1, job="a"))
        manager.free(JobId("a"))
        manager.request(request(1, job="b"))
        assert launcher.leases == []  # the slot is on its way back
        manager.slot_releasing(ResourceId("tm1"), slot.allocation_id)
        assert manager.match() == []
        assert len(launcher.leases) == 1
        # Its tasks end after all: the slot is free, and the request takes it.
        manager.confirm_freed(ResourceId("tm1"), slot.allocation_id)
        assert [g.request.job_id for g in manager.match()] == ["b"]
        assert manager.heartbeat(ResourceId("tm1"), []) == []

    def test_a_releasing_slot_the_task_executor_stops_reporting_is_free(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        manager.register(registration(1))
        (slot,) = reserve(manager, request(1, job="a"))
        manager.free(JobId("a"))
        manager.slot_releasing(ResourceId("tm1"), slot.allocation_id)
        assert manager.heartbeat(ResourceId("tm1"), [slot.allocation_id]) == []
        assert manager.free_slot_count() == 0
        manager.heartbeat(ResourceId("tm1"), [])
        assert manager.free_slot_count() == 1

    def test_close_drops_queued_requests_and_refuses_new_ones(self) -> None:
        manager = DefaultSlotManager(TestingLauncher(1), 1)
        manager.request(request(1))
        manager.close()
        assert manager.queued_requests == 0
        with pytest.raises(SlotAllocationError, match="shutting down"):
            manager.request(request(1, job="late"))


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
