"""The SlotPool: the slots a JobMaster holds for its job, kept across restarts.

As Flink's JobMaster slot pool, it outlives the attempts of the job: a restart deploys the
next attempt into the slots the failed one used, and asks the ResourceManager only for
the slots that are missing. A slot leaves the pool when

* its TaskManager is lost (``task_manager_lost``): the slot went with it, and the
  ResourceManager, which declared the loss, has dropped it already;
* a restart finds it unusable (``take_unusable``): its TaskManager could not be reached,
  or a task of the failed attempt may still run in it (its cancellation unconfirmed).
  Deploying there would run two attempts of a task side by side; the caller gives the
  slot back to the ResourceManager (its TaskExecutor frees it once that task ends) and a
  new one takes its place.

When the job ends, the scheduler releases all of the job's slots at the ResourceManager.

So losing one TaskManager out of n costs one new slot request for its slots and leaves
the n - 1 others deployed into again.

Pure bookkeeping: no I/O, no lock, no clock. The scheduler calls it under its own lock.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from weir.core.ids import AllocationId
from weir.jobmanager.execution_graph import SlotInfo

_Predicate = Callable[[SlotInfo], bool]


class SlotPool:
    """The job's slots, in the order they were offered (the order tasks are assigned)."""

    def __init__(self) -> None:
        self._slots: dict[AllocationId, SlotInfo] = {}

    @property
    def slots(self) -> list[SlotInfo]:
        return list(self._slots.values())

    def missing(self, required: int) -> int:
        """How many slots to ask for so that the pool holds ``required``."""
        return max(0, required - len(self._slots))

    def add(self, slots: Iterable[SlotInfo]) -> None:
        """Slots the ResourceManager offered for a request of this job."""
        for offered in slots:
            self._slots[offered.allocation_id] = offered

    def task_manager_lost(self, resource_id: str) -> list[SlotInfo]:
        """Drop the slots of a TaskManager the ResourceManager declared lost; returns them."""
        return self._take(lambda s: s.resource_id == resource_id)

    def take_unusable(
        self,
        *,
        lost_task_managers: Collection[str],
        lost_addresses: Collection[str],
        busy: Collection[AllocationId],
    ) -> list[SlotInfo]:
        """Remove and return the slots the next attempt must not deploy into: on a
        TaskManager that is lost or could not be reached (by resource id or address), or
        ``busy`` with a task of the failed attempt that did not confirm its end. The
        caller releases them."""
        return self._take(
            lambda s: (
                s.resource_id in lost_task_managers
                or s.rpc_address in lost_addresses
                or s.allocation_id in busy
            )
        )

    def _take(self, unusable: _Predicate) -> list[SlotInfo]:
        taken = [s for s in self._slots.values() if unusable(s)]
        for s in taken:
            del self._slots[s.allocation_id]
        return taken
