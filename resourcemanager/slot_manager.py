"""The SlotManager: matches slot requests to free slots of registered TaskManagers.

It asks its launcher for more TaskManagers when the free slots are short (up to the
most the cluster may lease), and names idle TaskManagers that may be released. It does
no I/O itself: the ResourceManager does the RPCs around it.

Threading: every method may be called from any thread; one lock guards the state and
one condition wakes the requests waiting for TaskManagers to register.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from weir.core.errors import SlotAllocationError
from weir.core.ids import AllocationId, JobId, ResourceId, new_allocation_id, new_hex_id

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaskManagerRegistration:
    """What a TaskExecutor tells the ResourceManager when it registers."""

    resource_id: ResourceId
    rpc_address: str
    data_host: str
    data_port: int
    num_slots: int
    spark_executor_id: str
    pid: int
    lease_id: str


@dataclass(frozen=True, slots=True)
class SlotAssignment:
    """One slot handed to a job."""

    allocation_id: AllocationId
    resource_id: ResourceId
    rpc_address: str
    data_host: str
    data_port: int


@dataclass(frozen=True, slots=True)
class SlotRequest:
    job_id: JobId
    count: int
    jobmaster_address: str
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class TaskManagerStatus:
    """A registered TaskManager as ListTaskManagers reports it."""

    registration: TaskManagerRegistration
    free_slots: int
    last_heartbeat_ms: int


class TaskManagerLauncher(Protocol):
    """Leases TaskManagers (SparkTaskManagerLauncher in production)."""

    @property
    def max_task_managers(self) -> int:
        """The most TaskManagers that can be leased at once."""
        ...

    def launch(self, lease_id: str) -> None:
        """Start leasing one TaskManager in the background under ``lease_id``; returns at
        once. The TaskManager registers with that lease id."""
        ...


@dataclass(slots=True)
class _Allocation:
    job_id: JobId
    jobmaster_address: str


@dataclass(slots=True)
class _TaskManager:
    registration: TaskManagerRegistration
    allocations: dict[AllocationId, _Allocation] = field(default_factory=dict)
    # Freed here but maybe not yet on the TaskExecutor: not handed out again until the
    # FreeSlot call returns, or a new job's AllocateSlot would find the slot taken.
    freeing: set[AllocationId] = field(default_factory=set)
    idle_since: float = 0.0
    last_heartbeat_ms: int = 0
    releasing: bool = False

    @property
    def free_slots(self) -> int:
        return self.registration.num_slots - len(self.allocations) - len(self.freeing)


class DefaultSlotManager:
    """Serves slot requests from registered TaskManagers; leases more on demand.

    ``launcher.launch()`` is called with the lock released. ``clock`` is a monotonic
    clock in seconds (a fake one in unit tests).
    """

    def __init__(
        self,
        launcher: TaskManagerLauncher,
        slots_per_task_manager: int,
        *,
        min_task_managers: int = 0,
        idle_timeout_ms: int = 30_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._launcher = launcher
        self._slots_per_tm = slots_per_task_manager
        self._min = min_task_managers
        self._idle_timeout_s = idle_timeout_ms / 1000
        self._clock = clock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._task_managers: dict[ResourceId, _TaskManager] = {}
        self._pending_leases: set[str] = set()
        self._closed = False

    # --- capacity --------------------------------------------------------------------
    @property
    def max_task_managers(self) -> int:
        return self._launcher.max_task_managers

    @property
    def max_slots(self) -> int:
        return self.max_task_managers * self._slots_per_tm

    def ensure_minimum(self) -> list[str]:
        """Lease TaskManagers until ``min`` are registered or pending; returns new lease ids."""
        with self._lock:
            leases = self._new_leases(self._min - self._live_count())
        self._start(leases)
        return leases

    def _live_count(self) -> int:
        live = sum(1 for tm in self._task_managers.values() if not tm.releasing)
        return live + len(self._pending_leases)

    def _new_leases(self, count: int) -> list[str]:
        # Called under the lock: a lease is pending before it starts, so counting room
        # and claiming it is one step and a fast registration finds it.
        leases = [new_hex_id()[:12] for _ in range(max(0, count))]
        self._pending_leases.update(leases)
        return leases

    def _start(self, leases: list[str]) -> None:
        for index, lease_id in enumerate(leases):
            try:
                self._launcher.launch(lease_id)
            except BaseException:
                with self._changed:
                    self._pending_leases.difference_update(leases[index:])
                    self._changed.notify_all()
                raise

    # --- registration ----------------------------------------------------------------
    def register(self, registration: TaskManagerRegistration) -> bool:
        """Add a TaskManager; False if one with that resource id is already registered."""
        with self._changed:
            if registration.resource_id in self._task_managers:
                return False
            self._pending_leases.discard(registration.lease_id)
            self._task_managers[registration.resource_id] = _TaskManager(
                registration,
                idle_since=self._clock(),
                last_heartbeat_ms=int(time.time() * 1000),
            )
            self._changed.notify_all()
            return True

    def heartbeat(
        self,
        resource_id: ResourceId,
        reported: list[AllocationId],
    ) -> list[AllocationId] | None:
        """Note a TaskManager's heartbeat. Returns the reported slots that are no longer
        allocated here (their FreeSlot was lost), or None for an unknown TaskManager.

        Allocation ids are never reused and a slot is reserved here before its
        TaskExecutor hears of it, so a reported slot unknown here is safe to free."""
        with self._lock:
            tm = self._task_managers.get(resource_id)
            if tm is None:
                return None
            tm.last_heartbeat_ms = int(time.time() * 1000)
            return [a for a in reported if a not in tm.allocations and a not in tm.freeing]

    def unregister(self, resource_id: ResourceId) -> dict[str, list[AllocationId]]:
        """Drop a TaskManager (lost or released) and its slots.

        Returns the slots it held per JobMaster address, for the lost-notices.
        """
        with self._changed:
            tm = self._task_managers.pop(resource_id, None)
            self._changed.notify_all()
        if tm is None:
            return {}
        held: dict[str, list[AllocationId]] = {}
        for allocation_id, allocation in tm.allocations.items():
            held.setdefault(allocation.jobmaster_address, []).append(allocation_id)
        return held

    def lease_ended(self, lease_id: str) -> ResourceId | None:
        """The Spark job of a lease ended. Returns the TaskManager it hosted if that one is
        still registered and not being released (it is lost); None otherwise."""
        with self._changed:
            self._pending_leases.discard(lease_id)
            self._changed.notify_all()
            for resource_id, tm in self._task_managers.items():
                if tm.registration.lease_id == lease_id and not tm.releasing:
                    return resource_id
        return None

    def mark_releasing(self, resource_id: ResourceId) -> TaskManagerRegistration | None:
        """Take a TaskManager out of service before its release; None if it is unknown or
        already being released."""
        with self._lock:
            tm = self._task_managers.get(resource_id)
            if tm is None or tm.releasing:
                return None
            tm.releasing = True
            return tm.registration

    def get(self, resource_id: ResourceId) -> TaskManagerRegistration | None:
        with self._lock:
            tm = self._task_managers.get(resource_id)
            return tm.registration if tm else None

    def task_managers(self) -> list[TaskManagerStatus]:
        with self._lock:
            return [
                TaskManagerStatus(tm.registration, tm.free_slots, tm.last_heartbeat_ms)
                for tm in self._task_managers.values()
            ]

    # --- slots -------------------------------------------------------------------------
    def reserve(self, request: SlotRequest) -> list[SlotAssignment]:
        """Reserve ``request.count`` slots, leasing TaskManagers as needed; blocks until
        they exist or the timeout passes. Raises SlotAllocationError at once when the
        count can never be met."""
        if request.count > self.max_slots:
            msg = (
                f"job {request.job_id} asked for {request.count} slots, but this cluster can "
                f"lease at most {self.max_task_managers} TaskManagers x {self._slots_per_tm} "
                f"slots = {self.max_slots} slots; lower the job's parallelism, or raise "
                "resourcemanager.taskmanager.max (or the Spark executor cores) or "
                "taskmanager.numberOfTaskSlots"
            )
            raise SlotAllocationError(msg)
        deadline = self._clock() + request.timeout_ms / 1000
        while True:
            with self._changed:
                if self._closed:
                    msg = "the ResourceManager is shutting down; no slots will be allocated"
                    raise SlotAllocationError(msg)
                free = self._free_slots()
                if free >= request.count:
                    return self._take(request)
                leases = self._new_leases(self._leases_needed(request.count - free))
                if not leases:
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        raise SlotAllocationError(self._timeout_message(request, free))
                    # Registration, a freed slot or a lease ending wakes us; the bound
                    # only keeps a fake clock and a lost notify from hanging the request.
                    self._changed.wait(min(remaining, 1.0))
                    continue
            self._start(leases)

    def _free_slots(self) -> int:
        return sum(tm.free_slots for tm in self._task_managers.values() if not tm.releasing)

    def _leases_needed(self, short_slots: int) -> int:
        pending_slots = len(self._pending_leases) * self._slots_per_tm
        wanted = math.ceil(max(0, short_slots - pending_slots) / self._slots_per_tm)
        room = self.max_task_managers - self._live_count()
        return max(0, min(wanted, room))

    def _take(self, request: SlotRequest) -> list[SlotAssignment]:
        # Spread over TaskManagers (most free slots first), as parallel subtasks gain
        # most from distinct processes (one GIL each).
        assignments: list[SlotAssignment] = []
        candidates = [tm for tm in self._task_managers.values() if not tm.releasing]
        while len(assignments) < request.count:
            tm = max(candidates, key=lambda t: t.free_slots)
            allocation_id = new_allocation_id()
            tm.allocations[allocation_id] = _Allocation(request.job_id, request.jobmaster_address)
            reg = tm.registration
            assignments.append(
                SlotAssignment(
                    allocation_id, reg.resource_id, reg.rpc_address, reg.data_host, reg.data_port
                )
            )
        return assignments

    def _timeout_message(self, request: SlotRequest, free: int) -> str:
        registered = len(self._task_managers)
        return (
            f"job {request.job_id} asked for {request.count} slots but only {free} were free "
            f"after {request.timeout_ms} ms ({registered} TaskManagers registered, "
            f"{len(self._pending_leases)} leases pending, at most {self.max_task_managers} "
            f"x {self._slots_per_tm} slots can be leased); other jobs may hold the rest or "
            "Spark could not start executors: lower the parallelism, free the cluster, or "
            "raise slot.request.timeout"
        )

    def free(
        self,
        job_id: JobId,
        allocation_ids: list[AllocationId] | None = None,
    ) -> list[tuple[AllocationId, TaskManagerRegistration]]:
        """Take the job's slots (all of them when ``allocation_ids`` is empty) from the
        job; returns them for the FreeSlot calls. They stay unavailable until
        ``confirm_freed`` says their TaskExecutor has let them go."""
        freed = []
        with self._lock:
            for tm in self._task_managers.values():
                for allocation_id, allocation in list(tm.allocations.items()):
                    if allocation.job_id != job_id:
                        continue
                    if allocation_ids and allocation_id not in allocation_ids:
                        continue
                    del tm.allocations[allocation_id]
                    tm.freeing.add(allocation_id)
                    freed.append((allocation_id, tm.registration))
        return freed

    def confirm_freed(self, resource_id: ResourceId, allocation_id: AllocationId) -> None:
        """The TaskExecutor freed the slot (or cannot be reached): it may be handed out."""
        with self._changed:
            tm = self._task_managers.get(resource_id)
            if tm is None:
                return
            tm.freeing.discard(allocation_id)
            if not tm.allocations and not tm.freeing:
                tm.idle_since = self._clock()
            self._changed.notify_all()

    def idle_task_managers(self) -> list[ResourceId]:
        """TaskManagers idle for longer than the idle timeout, beyond the minimum kept."""
        with self._lock:
            now = self._clock()
            live = [tm for tm in self._task_managers.values() if not tm.releasing]
            spare = len(live) - self._min
            idle = [
                tm
                for tm in live
                if not tm.allocations
                and not tm.freeing
                and now - tm.idle_since >= self._idle_timeout_s
            ]
            idle.sort(key=lambda t: t.idle_since)
            return [tm.registration.resource_id for tm in idle[: max(0, spare)]]

    def close(self) -> None:
        """Fail every waiting request."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
