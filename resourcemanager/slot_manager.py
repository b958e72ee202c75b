"""The SlotManager: a queue of slot requests served from the free slots of registered
TaskManagers, oldest first.

A request is queued and answered at once; ``match()`` hands out slots to the queued
requests in the order they arrived whenever the caller learns that something changed
(a TaskManager registered, slots were freed, a request arrived). It does no I/O itself
and never blocks: the ResourceManager does the RPCs around it.

Leasing and releasing follow one invariant, as Flink's slot manager keeps its declared
requirements: the queue's demand is met by, in this order, free slots, slots whose FreeSlot
call is under way (free a moment later), and leases already pending; only what is left is
leased (up to the most the cluster may lease). A slot whose FreeSlot found tasks still
in it (RELEASING on its TaskExecutor) is not counted: it may stay taken for as long as a
task ignores its cancellation. A TaskManager is idle, and released after the idle
timeout, only when no allocation, no slot being freed and no queued request needs it:
the free slots the queue asks for are the queue's.

Threading: every method may be called from any thread; one lock guards the state.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from weir.core.errors import SlotAllocationError
from weir.core.ids import AllocationId, JobId, ResourceId, new_allocation_id, new_hex_id
from weir.core.process_status import ProcessStatus

logger = logging.getLogger(__name__)

# Leases that ended before their TaskManager registered are counted over this window
# against resourcemanager.start-worker.max-failure-rate (Flink's, per minute).
_START_FAILURE_WINDOW_S = 60.0


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
    """A JobMaster's request for ``count`` slots; ``request_id`` is the JobMaster's own
    (it matches the offer to the request); ``timeout_ms`` bounds its time in the queue."""

    job_id: JobId
    count: int
    jobmaster_address: str
    timeout_ms: int
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class SlotGrant:
    """Slots reserved for a queued request, to be allocated and offered; ``sequence`` is
    its place in the queue (a grant that cannot be delivered goes back there)."""

    sequence: int
    request: SlotRequest
    slots: tuple[SlotAssignment, ...]


@dataclass(frozen=True, slots=True)
class TaskManagerStatus:
    """A registered TaskManager as ListTaskManagers reports it."""

    registration: TaskManagerRegistration
    free_slots: int
    last_heartbeat_ms: int
    process: ProcessStatus | None = None


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


@dataclass(frozen=True, slots=True)
class _PendingRequest:
    sequence: int
    request: SlotRequest
    queued_at: float
    deadline: float


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
    # Freed, and the FreeSlot call found tasks still ending in it (RELEASING on the
    # TaskExecutor): taken until they end, which a task ignoring its cancel can delay.
    draining: set[AllocationId] = field(default_factory=set)
    idle_since: float = 0.0
    last_heartbeat_ms: int = 0
    process: ProcessStatus | None = None
    releasing: bool = False

    @property
    def free_slots(self) -> int:
        return (
            self.registration.num_slots
            - len(self.allocations)
            - len(self.freeing)
            - len(self.draining)
        )

    @property
    def idle(self) -> bool:
        return not self.allocations and not self.freeing and not self.draining


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
        max_start_failures_per_minute: float = 10.0,
        start_retry_interval_ms: int = 3_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._launcher = launcher
        self._slots_per_tm = slots_per_task_manager
        self._min = min_task_managers
        self._idle_timeout_s = idle_timeout_ms / 1000
        self._clock = clock
        self._lock = threading.Lock()
        self._queue: deque[_PendingRequest] = deque()
        self._sequence = 0
        self._task_managers: dict[ResourceId, _TaskManager] = {}
        self._pending_leases: set[str] = set()
        self._max_start_failures = max_start_failures_per_minute
        self._start_retry_interval_s = start_retry_interval_ms / 1000
        self._start_failures: deque[float] = deque()
        self._last_start_failure = ""
        self._leasing_resumes_at = -math.inf
        self._leading = True
        """Whether its ResourceManager leads: one that does not leases nothing."""
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
            leases = (
                [] if self._leasing_paused() else self._new_leases(self._min - self._live_count())
            )
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
                with self._lock:
                    self._pending_leases.difference_update(leases[index:])
                raise

    # --- registration ----------------------------------------------------------------
    def register(self, registration: TaskManagerRegistration) -> bool:
        """Add a TaskManager; False if one with that resource id is already registered."""
        with self._lock:
            if registration.resource_id in self._task_managers:
                return False
            self._pending_leases.discard(registration.lease_id)
            self._task_managers[registration.resource_id] = _TaskManager(
                registration,
                idle_since=self._clock(),
                last_heartbeat_ms=int(time.time() * 1000),
            )
            return True

    def heartbeat(
        self,
        resource_id: ResourceId,
        reported: list[AllocationId],
        process: ProcessStatus | None = None,
    ) -> list[AllocationId] | None:
        """Note a TaskManager's heartbeat. Returns the reported slots that are no longer
        allocated here (their FreeSlot was lost), or None for an unknown TaskManager.

        Allocation ids are never reused and a slot is reserved here before its
        TaskExecutor hears of it, so a reported slot unknown here is safe to free. A slot
        being freed that the TaskExecutor no longer reports has been let go (a RELEASING
        slot whose tasks ended, its NotifySlotAvailable lost): it is free again."""
        with self._lock:
            tm = self._task_managers.get(resource_id)
            if tm is None:
                return None
            tm.last_heartbeat_ms = int(time.time() * 1000)
            tm.process = process or tm.process
            held = set(reported)
            let_go = [a for a in tm.freeing | tm.draining if a not in held]
            for allocation_id in let_go:
                self._freed_locked(tm, allocation_id)
            known = tm.allocations.keys() | tm.freeing | tm.draining
            return [a for a in reported if a not in known]

    def unregister(self, resource_id: ResourceId) -> dict[str, list[AllocationId]]:
        """Drop a TaskManager (lost or released) and its slots.

        Returns the slots it held per JobMaster address, for the lost-notices.
        """
        with self._lock:
            tm = self._task_managers.pop(resource_id, None)
        if tm is None:
            return {}
        held: dict[str, list[AllocationId]] = {}
        for allocation_id, allocation in tm.allocations.items():
            held.setdefault(allocation.jobmaster_address, []).append(allocation_id)
        return held

    def lease_ended(self, lease_id: str, error: str | None = None) -> ResourceId | None:
        """The Spark job of a lease ended (``error``: why, when it failed). Returns the
        TaskManager it hosted if that one is still registered and not being released (it
        is lost); None otherwise.

        A lease that ends before its TaskManager registered is a start failure: when
        ``max_start_failures_per_minute`` of them fall within a minute, no lease starts
        for ``start_retry_interval_ms`` (a TaskManager that cannot start is not re-leased
        in a tight loop), and the last one's error is told to the requests not met."""
        with self._lock:
            if lease_id in self._pending_leases:
                self._pending_leases.discard(lease_id)
                if not self._closed:
                    self._start_failed(lease_id, error)
                return None
            for resource_id, tm in self._task_managers.items():
                if tm.registration.lease_id == lease_id and not tm.releasing:
                    return resource_id
        return None

    def _start_failed(self, lease_id: str, error: str | None) -> None:
        now = self._clock()
        self._start_failures.append(now)
        failures = self._recent_start_failures(now)
        self._last_start_failure = error or "its Spark task returned before it registered"
        paused = failures >= self._max_start_failures
        if paused:
            self._leasing_resumes_at = now + self._start_retry_interval_s
        logger.warning(
            "lease %s ended before its TaskManager registered (%d such in the last minute%s): %s",
            lease_id,
            failures,
            f"; new leases wait {self._start_retry_interval_s:g} s" if paused else "",
            self._last_start_failure,
        )

    def set_leading(self, leading: bool) -> None:
        """Whether the ResourceManager leads. One that does not (deposed, or its leadership
        in doubt) starts no lease, for the minimum or for queued requests: TaskManagers
        are the leader's to lease. Leasing resumes with leadership."""
        with self._lock:
            self._leading = leading

    def _leasing_paused(self) -> bool:
        """Not leading, or too many leases failed to start lately: none starts until
        leadership is back or the retry interval is over (the maintenance loop serves the
        queue again then)."""
        return not self._leading or self._clock() < self._leasing_resumes_at

    def _recent_start_failures(self, now: float) -> int:
        while self._start_failures and self._start_failures[0] <= now - _START_FAILURE_WINDOW_S:
            self._start_failures.popleft()
        return len(self._start_failures)

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
                TaskManagerStatus(tm.registration, tm.free_slots, tm.last_heartbeat_ms, tm.process)
                for tm in self._task_managers.values()
            ]

    # --- slot requests -------------------------------------------------------------------
    def request(self, request: SlotRequest) -> int:
        """Queue ``request`` behind those already queued and lease TaskManagers for what
        the queue needs; returns how many requests are ahead of it. Raises
        SlotAllocationError at once when the count can never be met or the manager is
        closed. Queuing the same (job, request id) twice keeps the first."""
        if request.count > self.max_slots:
            msg = (
                f"job {request.job_id} asked for {request.count} slots, but this cluster can "
                f"lease at most {self.max_task_managers} TaskManagers x {self._slots_per_tm} "
                f"slots = {self.max_slots} slots; lower the job's parallelism, or raise "
                "resourcemanager.taskmanager.max (or the Spark executor cores) or "
                "taskmanager.numberOfTaskSlots"
            )
            raise SlotAllocationError(msg)
        with self._lock:
            if self._closed:
                msg = "the ResourceManager is shutting down; no slots will be allocated"
                raise SlotAllocationError(msg)
            for ahead, pending in enumerate(self._queue):
                if (pending.request.job_id, pending.request.request_id) == (
                    request.job_id,
                    request.request_id,
                ):
                    return ahead
            now = self._clock()
            self._sequence += 1
            self._queue.append(
                _PendingRequest(self._sequence, request, now, now + request.timeout_ms / 1000)
            )
            ahead = len(self._queue) - 1
            # Logged under the lock, so the log shows the queue's own order.
            logger.info(
                "job %s: request %s for %d slots queued as #%d (%d ahead)",
                request.job_id,
                request.request_id,
                request.count,
                self._sequence,
                ahead,
            )
            leases = self._new_leases(self._leases_needed())
        self._start(leases)
        return ahead

    def match(self) -> list[SlotGrant]:
        """Reserve slots for the queued requests, oldest first, as long as the oldest can
        be met (strict FIFO: a large request is not overtaken forever by small ones), and
        lease TaskManagers for what the rest still needs. The grants' slots are reserved
        here; the caller allocates them on their TaskExecutors and offers them."""
        with self._lock:
            grants: list[SlotGrant] = []
            while self._queue and not self._closed:
                head = self._queue[0]
                if head.request.count > self._free_slots():
                    break
                self._queue.popleft()
                grant = SlotGrant(head.sequence, head.request, self._take(head.request))
                grants.append(grant)
                logger.info(
                    "job %s: request %s (#%d) gets %d slots on %s",
                    head.request.job_id,
                    head.request.request_id,
                    head.sequence,
                    len(grant.slots),
                    sorted({a.resource_id for a in grant.slots}),
                )
            leases = self._new_leases(self._leases_needed())
        self._start(leases)
        return grants

    def requeue(self, grant: SlotGrant) -> None:
        """Put a grant's request back where it was in the queue (its slots could not be
        allocated); the caller has freed the grant's slots."""
        with self._lock:
            if self._closed:
                return
            now = self._clock()
            request = grant.request
            pending = _PendingRequest(grant.sequence, request, now, now + request.timeout_ms / 1000)
            index = next(
                (i for i, p in enumerate(self._queue) if p.sequence > grant.sequence),
                len(self._queue),
            )
            self._queue.insert(index, pending)

    def cancel(self, job_id: JobId, request_id: str) -> str | None:
        """Drop a queued request; returns why it was not met (for the JobMaster's error),
        or None when it is not queued (already granted, or unknown)."""
        with self._lock:
            for ahead, pending in enumerate(self._queue):
                if pending.request.job_id == job_id and pending.request.request_id == request_id:
                    del self._queue[ahead]
                    return self._unmet_message(pending, ahead)
        return None

    def cancel_job(self, job_id: JobId) -> int:
        """Drop every queued request of the job; returns how many there were."""
        with self._lock:
            kept = deque(p for p in self._queue if p.request.job_id != job_id)
            dropped = len(self._queue) - len(kept)
            self._queue = kept
        return dropped

    def expire(self) -> list[SlotRequest]:
        """Drop and return the queued requests past their timeout: their JobMasters gave
        up (and failed to say so), and must not hold back the requests behind them."""
        with self._lock:
            now = self._clock()
            expired = [p.request for p in self._queue if p.deadline <= now]
            if expired:
                self._queue = deque(p for p in self._queue if p.deadline > now)
        return expired

    @property
    def queued_requests(self) -> int:
        with self._lock:
            return len(self._queue)

    def _demand(self) -> int:
        return sum(p.request.count for p in self._queue)

    def free_slot_count(self) -> int:
        """Slots that can be handed out now."""
        with self._lock:
            return self._free_slots()

    def _free_slots(self) -> int:
        return sum(tm.free_slots for tm in self._task_managers.values() if not tm.releasing)

    def _coming_free(self) -> int:
        """Slots whose FreeSlot call is under way: free once it returns."""
        return sum(len(tm.freeing) for tm in self._task_managers.values() if not tm.releasing)

    def _leases_needed(self) -> int:
        """TaskManagers to lease for what the queue asks beyond the free slots, the slots
        coming free and the pending leases (the module docstring's invariant)."""
        if self._leasing_paused():
            return 0
        short_slots = self._demand() - self._free_slots() - self._coming_free()
        pending_slots = len(self._pending_leases) * self._slots_per_tm
        wanted = math.ceil(max(0, short_slots - pending_slots) / self._slots_per_tm)
        room = self.max_task_managers - self._live_count()
        return max(0, min(wanted, room))

    def _take(self, request: SlotRequest) -> tuple[SlotAssignment, ...]:
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
        return tuple(assignments)

    def _unmet_message(self, pending: _PendingRequest, ahead: int) -> str:
        request = pending.request
        now = self._clock()
        waited_ms = int((now - pending.queued_at) * 1000)
        message = (
            f"job {request.job_id} asked for {request.count} slots but only "
            f"{self._free_slots()} were free after {waited_ms} ms, with {ahead} requests "
            f"queued before it ({len(self._task_managers)} TaskManagers registered, "
            f"{len(self._pending_leases)} leases pending, at most {self.max_task_managers} "
            f"x {self._slots_per_tm} slots can be leased); "
        )
        failures = self._recent_start_failures(now)
        if failures:
            return message + (
                f"{failures} leases in the last minute ended before their TaskManager "
                f"registered, the last with: {self._last_start_failure}; fix what stops "
                "TaskManagers from starting (the master's log has each failure)"
            )
        return message + (
            "other jobs may hold the rest or Spark could not start executors: lower the "
            "parallelism, free the cluster, or raise slot.request.timeout"
        )

    def free(
        self,
        job_id: JobId,
        allocation_ids: list[AllocationId] | None = None,
    ) -> list[tuple[AllocationId, TaskManagerRegistration]]:
        """Take the job's slots (all of them when ``allocation_ids`` is empty) from the
        job; returns them for the FreeSlot calls. They stay unavailable until
        ``confirm_freed`` says their TaskExecutor has let them go (or ``slot_releasing``
        that their tasks are still ending)."""
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
        with self._lock:
            tm = self._task_managers.get(resource_id)
            if tm is not None:
                self._freed_locked(tm, allocation_id)

    def slot_releasing(self, resource_id: ResourceId, allocation_id: AllocationId) -> None:
        """The FreeSlot call found tasks still ending in the slot: it stays taken until
        ``confirm_freed`` (NotifySlotAvailable) or a heartbeat that no longer reports it,
        and is no longer counted on for the queue (``match()`` leases for it)."""
        with self._lock:
            tm = self._task_managers.get(resource_id)
            if tm is not None and allocation_id in tm.freeing:
                tm.freeing.discard(allocation_id)
                tm.draining.add(allocation_id)

    def _freed_locked(self, tm: _TaskManager, allocation_id: AllocationId) -> None:
        tm.freeing.discard(allocation_id)
        tm.draining.discard(allocation_id)
        if tm.idle:
            tm.idle_since = self._clock()

    def idle_task_managers(self) -> list[ResourceId]:
        """TaskManagers idle for longer than the idle timeout, beyond the minimum kept and
        beyond what the queued requests ask for: the free slots a queued request waits
        for are kept for it (the longest idle go first)."""
        with self._lock:
            now = self._clock()
            live = [tm for tm in self._task_managers.values() if not tm.releasing]
            spare = len(live) - self._min
            idle = [tm for tm in live if tm.idle and now - tm.idle_since >= self._idle_timeout_s]
            idle.sort(key=lambda t: t.idle_since)
            surplus = self._free_slots() - self._demand()
            released: list[ResourceId] = []
            for tm in idle[: max(0, spare)]:
                if tm.free_slots > surplus:
                    break
                surplus -= tm.free_slots
                released.append(tm.registration.resource_id)
            return released

    def close(self) -> None:
        """Refuse new requests and drop the queued ones (their JobMasters are closing too,
        or time out)."""
        with self._lock:
            self._closed = True
            self._queue.clear()
