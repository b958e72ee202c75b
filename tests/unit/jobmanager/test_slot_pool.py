"""SlotPool: the slots a JobMaster keeps across restarts, and which ones leave it."""

from __future__ import annotations

from weir.core.ids import AllocationId, ResourceId
from weir.jobmanager.execution_graph import SlotInfo
from weir.jobmanager.slot_pool import SlotPool


def slot(n: int, tm: int | None = None) -> SlotInfo:
    """Slot ``a<n>`` on TaskManager ``tm<tm>`` (``tm<n>`` by default)."""
    host = n if tm is None else tm
    return SlotInfo(
        AllocationId(f"a{n}"), ResourceId(f"tm{host}"), f"127.0.0.1:{1000 + host}", "127.0.0.1", 1
    )


def ids(slots: list[SlotInfo]) -> list[str]:
    return [s.allocation_id for s in slots]


class TestSlotPool:
    def test_an_empty_pool_misses_every_slot_and_a_full_one_none(self) -> None:
        pool = SlotPool()
        assert pool.missing(3) == 3
        pool.add([slot(0), slot(1), slot(2)])
        assert pool.missing(3) == 0
        assert pool.missing(2) == 0
        assert ids(pool.slots) == ["a0", "a1", "a2"]  # in the order offered

    def test_a_lost_task_manager_takes_all_its_slots_and_only_those(self) -> None:
        pool = SlotPool()
        pool.add([slot(0, tm=0), slot(1, tm=0), slot(2, tm=1)])
        assert ids(pool.task_manager_lost("tm0")) == ["a0", "a1"]
        assert ids(pool.slots) == ["a2"]
        assert pool.missing(3) == 2
        assert pool.task_manager_lost("tm0") == []

    def test_slots_added_after_a_loss_come_after_those_kept(self) -> None:
        pool = SlotPool()
        pool.add([slot(0), slot(1)])
        pool.task_manager_lost("tm0")
        pool.add([slot(2)])
        assert ids(pool.slots) == ["a1", "a2"]

    def test_a_restart_takes_out_slots_of_unreachable_task_managers_and_busy_slots(
        self,
    ) -> None:
        pool = SlotPool()
        pool.add([slot(0), slot(1), slot(2), slot(3)])
        taken = pool.take_unusable(
            lost_task_managers={"tm0"},
            lost_addresses={"127.0.0.1:1001"},  # a cancel to it could not be delivered
            busy={AllocationId("a2")},  # its old task did not confirm its cancellation
        )
        assert ids(taken) == ["a0", "a1", "a2"]
        assert ids(pool.slots) == ["a3"]

    def test_a_restart_with_nothing_lost_and_nothing_busy_keeps_every_slot(self) -> None:
        pool = SlotPool()
        pool.add([slot(0), slot(1)])
        assert pool.take_unusable(lost_task_managers=(), lost_addresses=(), busy=()) == []
        assert pool.missing(2) == 0
