"""The ExecutionSlotAllocator: the slots a job's attempts deploy into, asked for at the
ResourceManager and kept across restarts (Flink's ExecutionSlotAllocator over its slot
pool).

It holds the job's ``SlotPool``, the one slot request waiting at the ResourceManager, and
the TaskManagers the job learned are lost or unreachable (a restart must not deploy into
their slots, and no call goes to them). The scheduler asks it for the slots an attempt
lacks (``acquire_missing_slots``), hands it the ResourceManager's offers
(``offer_slots``), tells it of TaskManagers lost or unreachable, and at a restart takes
the slots the next attempt must not use (``take_unusable``); when the job ends it gives
every slot back (``job_ended``).

Threading: it shares the scheduler's lock, which guards every field here. A method says
"under the lock" when its caller must hold it; the others take it themselves, and call
the ResourceManager only outside it. ``acquire_missing_slots`` blocks (on the thread that
deploys the attempt) until the offer comes or slot.request.timeout passes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future
from dataclasses import dataclass

from weir.core import config as cfg
from weir.core.errors import SlotAllocationError, WeirError
from weir.core.ids import AllocationId, new_hex_id
from weir.core.job_status import JobStatus
from weir.jobmanager.execution_graph import SlotInfo
from weir.jobmanager.gateways import TASK_RPC_TIMEOUT_S, ResourceManagerGateway
from weir.jobmanager.slot_pool import SlotPool

logger = logging.getLogger(__name__)

# With high availability the ResourceManager's address reaches a JobMaster through the HA
# store: while it is unknown the allocator looks again this often (as often as the
# scheduler asks for its leadership), up to slot.request.timeout.
_ADDRESS_POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class _PendingSlotRequest:
    """A slot request queued with the ResourceManager for ``count`` slots; ``slots``
    completes with its offer."""

    request_id: str
    count: int
    slots: Future[list[SlotInfo]]


class ExecutionSlotAllocator:
    """The job's slots and its requests for more, for the scheduler ``job_id``.

    ``lock`` is the scheduler's; ``job_status()`` (read under it) says whether the job
    still needs slots; ``resource_manager_address()`` is None while no ResourceManager is
    known; ``jobmaster_address()`` is where the ResourceManager offers the slots."""

    def __init__(
        self,
        job_id: str,
        config: dict[str, str],
        *,
        lock: threading.RLock,
        job_status: Callable[[], JobStatus],
        resource_manager: ResourceManagerGateway,
        resource_manager_address: Callable[[], str | None],
        jobmaster_address: Callable[[], str],
    ) -> None:
        self._job_id = job_id
        self._timeout_ms = cfg.get(config, cfg.SLOT_REQUEST_TIMEOUT)
        self._lock = lock
        self._job_status = job_status
        self._resource_manager = resource_manager
        self._rm_address = resource_manager_address
        self._jobmaster_address = jobmaster_address
        # The job's slots, kept across restarts (jobmanager.slot_pool).
        self._slot_pool = SlotPool()
        self._slot_request: _PendingSlotRequest | None = None
        self._lost_task_managers: set[str] = set()
        # rpc addresses of TaskManagers known to be lost: no calls to them (they could
        # only time out), their tasks are taken as gone.
        self._lost_addresses: set[str] = set()
        self._final_release: threading.Thread | None = None

    # -- the pool, under the lock ------------------------------------------------------
    @property
    def slots(self) -> list[SlotInfo]:
        """Under the lock: the pool's slots, in the order they were offered."""
        return self._slot_pool.slots

    def missing(self, required: int) -> int:
        """Under the lock: how many slots to ask for so that the pool holds ``required``."""
        return self._slot_pool.missing(required)

    def deploying_into(self, slots: Collection[SlotInfo]) -> None:
        """Under the lock: an attempt deploys into ``slots``; their addresses are no longer
        taken as lost (a port of a lost TaskManager may be reused by a new one)."""
        self._lost_addresses.difference_update(s.rpc_address for s in slots)

    def task_manager_unreachable(self, resource_id: str, address: str) -> None:
        """Under the lock: a call to the TaskManager ``resource_id`` at ``address`` could
        not reach it: a restart must not reuse its slots, even before the ResourceManager
        has declared it lost."""
        self._lost_task_managers.add(resource_id)
        self._lost_addresses.add(address)

    def task_manager_lost(self, resource_id: str, addresses: Collection[str]) -> None:
        """Under the lock: the ResourceManager declared the TaskManager ``resource_id``
        (at ``addresses``) lost. Its slots went with it (the ResourceManager dropped them
        when it declared the loss): the next attempt asks for as many new ones."""
        self._lost_task_managers.add(resource_id)
        self._slot_pool.task_manager_lost(resource_id)
        self._lost_addresses.update(addresses)

    def address_unreachable(self, address: str) -> None:
        """Under the lock: a call to ``address`` found no TaskExecutor there."""
        self._lost_addresses.add(address)

    def lost_addresses(self) -> set[str]:
        """Under the lock: the addresses of TaskManagers known to be lost (a copy)."""
        return set(self._lost_addresses)

    def take_unusable(self, busy: Collection[AllocationId]) -> list[SlotInfo]:
        """Under the lock, at a restart: remove and return the slots the next attempt must
        not deploy into (``SlotPool.take_unusable``); the caller releases them. The
        TaskManagers lost so far are forgotten: their slots are gone."""
        unusable = self._slot_pool.take_unusable(
            lost_task_managers=self._lost_task_managers,
            lost_addresses=self._lost_addresses,
            busy=busy,
        )
        self._lost_task_managers.clear()
        return unusable

    # -- requests at the ResourceManager -------------------------------------------------
    def acquire_missing_slots(self, required: int) -> None:
        """Ask for the slots the pool lacks until it holds ``required`` (a TaskManager
        lost while a request waits takes kept slots with it)."""
        while True:
            with self._lock:
                needed = self._slot_pool.missing(required)
            if not needed:
                return
            offered = self._request_slots(needed)
            with self._lock:
                self._slot_pool.add(offered)

    def _request_slots(self, needed: int) -> list[SlotInfo]:
        """Queue a request for ``needed`` slots with the ResourceManager and wait (on this
        scheduler thread, no server thread) for its offer, at most slot.request.timeout;
        then withdraw it and fail with the ResourceManager's account of why it was not
        met."""
        timeout_ms = self._timeout_ms
        # With high availability the ResourceManager's address reaches a JobMaster through
        # the HA store, maybe just after the JobMaster started (a new leader recovering
        # its jobs): the request waits for it, as Flink's slot pool waits for its
        # ResourceManager, up to slot.request.timeout.
        deadline = time.monotonic() + timeout_ms / 1000
        address = self._rm_address()
        while not address:
            with self._lock:
                running = self._job_status() is JobStatus.RUNNING
            if not running or time.monotonic() >= deadline:
                msg = (
                    f"no ResourceManager is known to job {self._job_id} after "
                    f"{timeout_ms} ms (slot.request.timeout); is the cluster running?"
                )
                raise WeirError(msg)
            time.sleep(_ADDRESS_POLL_S)  # polling interval; the address decides
            address = self._rm_address()
        pending = _PendingSlotRequest(new_hex_id(), needed, Future())
        with self._lock:
            status = self._job_status()
            if status is not JobStatus.RUNNING:
                msg = f"job {self._job_id} is {status.name}; it needs no slots"
                raise WeirError(msg)
            self._slot_request = pending
        try:
            ahead = self._resource_manager.request_slots(
                address,
                job_id=self._job_id,
                request_id=pending.request_id,
                count=needed,
                jobmaster_address=self._jobmaster_address(),
                timeout_ms=timeout_ms,
                rpc_timeout_s=TASK_RPC_TIMEOUT_S,
            )
            logger.info(
                "job %s: requested %d slots (request %s, %d requests ahead)",
                self._job_id,
                needed,
                pending.request_id,
                ahead,
            )
            try:
                return pending.slots.result(timeout=timeout_ms / 1000)
            except TimeoutError:
                pass
            with self._lock:
                if self._slot_request is pending:
                    self._slot_request = None
            if pending.slots.done():  # offered just before the timeout: take them
                return pending.slots.result()
            explanation = self._resource_manager.cancel_slot_request(
                address,
                job_id=self._job_id,
                request_id=pending.request_id,
                rpc_timeout_s=TASK_RPC_TIMEOUT_S,
            )
            msg = explanation or (
                f"job {self._job_id} asked for {needed} slots and got none within "
                f"{timeout_ms} ms; lower the parallelism, free the cluster, or raise "
                "slot.request.timeout"
            )
            raise SlotAllocationError(msg)
        finally:
            with self._lock:
                if self._slot_request is pending:
                    self._slot_request = None

    def offer_slots(self, request_id: str, slots: list[SlotInfo]) -> tuple[bool, str]:
        """The ResourceManager offers the slots of a request (JobMaster.OfferSlots); taken
        only while the scheduler waits for that request. Not taken: the ResourceManager
        frees them."""
        with self._lock:
            pending = self._slot_request
            if pending is None or pending.request_id != request_id:
                return False, f"job {self._job_id} is not waiting for slot request {request_id}"
            if len(slots) != pending.count:
                return False, (
                    f"job {self._job_id} asked for {pending.count} slots in request "
                    f"{request_id}; {len(slots)} were offered"
                )
            self._slot_request = None
        pending.slots.set_result(slots)
        return True, ""

    def release_slots(self, slots: list[SlotInfo] | None = None) -> None:
        """Give ``slots`` back to the ResourceManager; None: every slot of the job, and
        its queued requests (the job ended). Never under the lock."""
        address = self._rm_address()
        if not address or slots == []:
            return
        try:
            self._resource_manager.release_slots(
                address,
                job_id=self._job_id,
                allocation_ids=[s.allocation_id for s in slots or ()],
                rpc_timeout_s=TASK_RPC_TIMEOUT_S,
            )
        except WeirError:
            # The ResourceManager frees the slots of a finished job itself when its
            # TaskManagers report them idle; a lost release costs only time.
            logger.warning("job %s: releasing slots failed", self._job_id, exc_info=True)

    # -- the job's end ---------------------------------------------------------------
    def job_ended(self, status: JobStatus) -> None:
        """The job ended in ``status``: wake the thread waiting for slots, and give every
        slot back from a thread of its own (``close`` waits for it)."""
        with self._lock:
            self._abandon_slot_request(f"job {self._job_id} is {status.name}")
        self._final_release = threading.Thread(
            target=self.release_slots, daemon=True, name=f"release-{self._job_id[:8]}"
        )
        self._final_release.start()

    def _abandon_slot_request(self, reason: str) -> None:
        """Under the lock: wake the scheduler thread waiting for slots (the job ended)."""
        pending, self._slot_request = self._slot_request, None
        if pending is not None and not pending.slots.done():
            pending.slots.set_exception(SlotAllocationError(reason))

    def close(self) -> None:
        """Close the channel to the ResourceManager once the job's slots are released."""
        if self._final_release is not None:
            # Bounded by the ReleaseSlots call's own timeout.
            self._final_release.join(TASK_RPC_TIMEOUT_S + 1)
        self._resource_manager.close()
