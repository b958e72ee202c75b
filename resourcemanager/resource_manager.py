"""The ResourceManager: TaskManager registry, heartbeats, slots and Spark leases.

It is the Spark driver: TaskManagers are leased as long-running Spark tasks
(``SparkTaskManagerLauncher``), register here over gRPC and heartbeat; JobMasters ask it
for slots. Lifecycle (registered, lost, released) is logged at INFO with resource ids.

Example::

    with ResourceManager({"spark.master": "local[2]"}) as rm:
        address = rm.start()
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from weir.core import config as cfg
from weir.core import rpc
from weir.core.errors import (
    LeaderLostError,
    RemoteTimeoutError,
    ServiceUnavailableError,
    SlotAllocationError,
    TaskManagerNotFoundError,
    WeirError,
)
from weir.core.ids import AllocationId, JobId, ResourceId
from weir.core.process_status import ProcessStatus
from weir.core.security import SecurityConfig
from weir.core.task_manager_files import TaskManagerFile, TaskManagerFileType
from weir.resourcemanager import service
from weir.resourcemanager.heartbeat_monitor import HeartbeatMonitor
from weir.resourcemanager.slot_manager import (
    DefaultSlotManager,
    SlotAssignment,
    SlotGrant,
    SlotRequest,
    TaskManagerRegistration,
    TaskManagerStatus,
)
from weir.resourcemanager.spark_launcher import (
    DEFAULT_ENTRY_POINT,
    LeaseEnded,
    SparkTaskManagerLauncher,
    create_spark_context,
    stop_spark_context,
)

if TYPE_CHECKING:
    import grpc
    from pyspark import SparkContext

logger = logging.getLogger(__name__)

# A TaskExecutor answers a control RPC (AllocateSlot, FreeSlot, Stop) at once; 10 s is
# far beyond that and still short next to slot.request.timeout.
_CONTROL_RPC_TIMEOUT_S = 10.0
# A file upload reads at most a few MiB on the TaskManager's host and sends it back.
_FILE_UPLOAD_TIMEOUT_S = 30.0
# After a Stop RPC, a TaskExecutor cancels its tasks (they get a few seconds) and stops
# its servers with a 1 s grace; past this its Spark job is cancelled instead (which
# kills the Python worker some 3 s later).
_STOP_GRACE_S = 10.0
# How long close() waits for cancelled lease jobs to end before it gives up on them.
_CANCEL_WAIT_S = 30.0
# A queued slot request outlives its slot.request.timeout by this much: its JobMaster
# withdraws it at the timeout (and learns why it was not met); the queue drops it on its
# own only when that withdrawal never came (the JobMaster died), so it cannot hold back
# the requests behind it for ever. Twice the control RPC timeout covers a slow withdrawal.
_QUEUE_GRACE_MS = int(2 * _CONTROL_RPC_TIMEOUT_S * 1000)
# Allocations, offers and FreeSlot calls run on this many threads, never on the gRPC
# server's: each is a few control RPCs, so four keep up with a queue of any length while
# one unreachable TaskExecutor (a 10 s timeout) holds only one of them.
_SLOT_WORKERS = 4
# The maintenance loop re-leases TaskManagers below resourcemanager.taskmanager.min at
# most this often: a lost one is replaced at once, but a lease that cannot register
# (Spark cannot start executors) is not retried in a tight loop.
_MINIMUM_CHECK_PERIOD_S = 10.0


@dataclass(frozen=True, slots=True)
class RegistrationResult:
    accepted: bool
    message: str
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int


class ResourceManager:
    """The ResourceManager component; see the module docstring.

    ``spark_context``: None creates one from the ``spark.*`` keys (and stops it on close);
    a given one is reused and never stopped.
    """

    def __init__(
        self,
        config: Mapping[str, str],
        spark_context: SparkContext | None = None,
        *,
        entry_point: str = DEFAULT_ENTRY_POINT,
    ) -> None:
        self._config = dict(config)
        self._security = SecurityConfig.from_config(config)
        self._heartbeat_interval_ms = cfg.get(config, cfg.HEARTBEAT_INTERVAL)
        self._heartbeat_timeout_ms = cfg.get(config, cfg.HEARTBEAT_TIMEOUT)
        # The session comes first: gRPC's fork handlers must not see a server when the
        # JVM is launched.
        self._owns_spark = spark_context is None
        self._spark = spark_context if spark_context is not None else create_spark_context(config)
        self._address = ""
        self._launcher = SparkTaskManagerLauncher(
            self._spark,
            self._task_manager_config(),
            lambda: self._address,
            self._on_lease_ended,
            entry_point=entry_point,
        )
        self._slot_manager = DefaultSlotManager(
            self._launcher,
            cfg.get(config, cfg.NUM_TASK_SLOTS),
            min_task_managers=cfg.get(config, cfg.TASKMANAGERS_MIN),
            idle_timeout_ms=cfg.get(config, cfg.RESOURCE_WAIT_IDLE_TIMEOUT),
            max_start_failures_per_minute=cfg.get(config, cfg.START_WORKER_MAX_FAILURE_RATE),
            start_retry_interval_ms=cfg.get(config, cfg.START_WORKER_RETRY_INTERVAL),
        )
        self._heartbeats: HeartbeatMonitor[ResourceId] = HeartbeatMonitor(
            self._heartbeat_timeout_ms
        )
        self._gateways = service.Gateways(self._security)
        # Lost-notices and releases run here, so neither the heartbeat check nor a
        # lease thread waits on another process.
        self._background = ThreadPoolExecutor(max_workers=4, thread_name_prefix="weir-rm")
        self._slot_workers = ThreadPoolExecutor(
            max_workers=_SLOT_WORKERS, thread_name_prefix="weir-rm-slots"
        )
        self._server: grpc.Server | None = None
        self._stopped = threading.Event()
        self._maintenance: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._registration_delays_ms: list[int] = []
        # Set by leader election; until then (no election ran) every call is served.
        self._fenced = False
        self._leader_session: str | None = None
        self._confirm_session: Callable[[str], bool] | None = None
        self._jobmaster_addresses: dict[JobId, str] = {}
        # Leases of TaskManagers declared lost: they may not register again (a few bytes
        # per lost TaskManager for the life of the cluster).
        self._ended_leases: set[str] = set()

    def _task_manager_config(self) -> dict[str, str]:
        # The TaskExecutor gets the whole configuration (plain strings, in the closure).
        return {k: str(v) for k, v in self._config.items()}

    # --- lifecycle -----------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0, *, advertise: str = "") -> str:
        """Start the gRPC server on ``host:port`` and lease ``resourcemanager.taskmanager.min``
        TaskManagers; returns the address TaskManagers are told, ``advertise`` (else
        ``host``) with the port."""
        server = rpc.create_server(security=self._security, name="weir-resourcemanager-rpc")
        service.add_to_server(self, server)
        self._address = rpc.bind(server, host, port, advertise=advertise)
        server.start()
        self._server = server
        self._maintenance = threading.Thread(
            target=self._maintenance_loop, name="weir-rm-maintenance", daemon=True
        )
        self._maintenance.start()
        logger.info(
            "ResourceManager started at %s (at most %d TaskManagers of %d slots)",
            self._address,
            self._slot_manager.max_task_managers,
            cfg.get(self._config, cfg.NUM_TASK_SLOTS),
        )
        self._slot_manager.ensure_minimum()
        return self._address

    @property
    def address(self) -> str:
        return self._address

    @property
    def spark_context(self) -> SparkContext:
        return self._spark

    @property
    def max_task_managers(self) -> int:
        return self._slot_manager.max_task_managers

    @property
    def registration_delays_ms(self) -> list[int]:
        """Lease submission to registration, per TaskManager registered so far."""
        with self._lock:
            return list(self._registration_delays_ms)

    def running_leases(self) -> list[str]:
        """Leases whose Spark job has not ended."""
        return self._launcher.running_leases()

    def close(self, *, stop_spark: bool = True) -> None:
        """Stop every TaskExecutor (cancelling the Spark job of any that does not stop),
        wait for the leases to end, stop the server. Idempotent.

        ``stop_spark=False`` leaves a SparkContext this ResourceManager created to the
        end of the process: its JVM stops when the interpreter exits (the gateway's
        stdin closes), so an embedded run does not wait for Spark's orderly stop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._slot_manager.close()
        self._stopped.set()
        if self._maintenance is not None:
            self._maintenance.join()
        releasing = [
            registration
            for status in self._slot_manager.task_managers()
            if (registration := self._slot_manager.mark_releasing(status.registration.resource_id))
        ]
        # Plain threads, not the pool: close() may run from an atexit hook, when
        # concurrent.futures no longer accepts work.
        stops = [
            threading.Thread(
                target=self._stop_remote,
                args=(registration, "the cluster shuts down"),
                name=f"weir-rm-stop-{registration.resource_id[:8]}",
                daemon=True,
            )
            for registration in releasing
        ]
        for stop in stops:
            stop.start()
        for stop in stops:
            stop.join()
        # Only the leases told to stop may end by themselves; one whose TaskManager has not
        # registered yet (leased for a slot request the cluster will never serve now) got
        # no Stop and is cancelled at once rather than after the grace.
        stopped = {registration.lease_id for registration in releasing}
        deadline = time.monotonic() + _STOP_GRACE_S
        for lease_id in self._launcher.running_leases():
            if lease_id in stopped:
                self._launcher.join(lease_id, max(0.0, deadline - time.monotonic()))
        leftover = self._launcher.running_leases()
        for lease_id in leftover:
            self._launcher.cancel(lease_id)
        deadline = time.monotonic() + _CANCEL_WAIT_S
        for lease_id in leftover:
            if not self._launcher.join(lease_id, max(0.0, deadline - time.monotonic())):
                logger.warning("the Spark job of lease %s did not end after cancellation", lease_id)
        self._slot_workers.shutdown(wait=True, cancel_futures=True)
        self._background.shutdown(wait=True)
        if self._server is not None:
            rpc.stop_server(self._server, 1.0)
        self._gateways.close()
        if self._owns_spark and stop_spark:
            stop_spark_context(self._spark)
        logger.info("ResourceManager at %s closed", self._address)

    def __enter__(self) -> ResourceManager:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- TaskExecutor side ---------------------------------------------------------------
    def register_task_executor(self, registration: TaskManagerRegistration) -> RegistrationResult:
        def result(accepted: bool, message: str) -> RegistrationResult:
            return RegistrationResult(
                accepted, message, self._heartbeat_interval_ms, self._heartbeat_timeout_ms
            )

        if self._closed:
            return result(False, "the ResourceManager is shutting down")
        with self._lock:
            ended = registration.lease_id in self._ended_leases
        if ended:
            # Declared lost (a long pause, say) and its Spark job cancelled: taking it
            # back would hand out slots of a process about to be killed.
            logger.info(
                "TaskManager %s of ended lease %s refused",
                registration.resource_id,
                registration.lease_id,
            )
            return result(
                False,
                f"its lease {registration.lease_id} was ended when it was declared lost; "
                "this TaskManager stops (a new lease replaces it)",
            )
        if not self._slot_manager.register(registration):
            # A re-registration of a TaskExecutor we still know: keep the first one.
            self._heartbeats.receive_heartbeat(registration.resource_id)
            return result(True, "already registered")
        self._heartbeats.monitor(registration.resource_id)
        submitted = self._launcher.submitted_at(registration.lease_id)
        delay_ms = -1 if submitted is None else int((time.monotonic() - submitted) * 1000)
        if delay_ms >= 0:
            with self._lock:
                self._registration_delays_ms.append(delay_ms)
        logger.info(
            "TaskManager %s registered: %s, %d slots, data %s:%d, pid %d, lease %s, %s "
            "(%d ms after the lease was submitted)",
            registration.resource_id,
            registration.rpc_address,
            registration.num_slots,
            registration.data_host,
            registration.data_port,
            registration.pid,
            registration.lease_id,
            registration.spark_executor_id,
            delay_ms,
        )
        self._serve_slot_requests()
        return result(True, "registered")

    def heartbeat(
        self,
        resource_id: ResourceId,
        allocated: list[AllocationId],
        process: ProcessStatus | None = None,
    ) -> list[AllocationId] | None:
        """Record a TaskExecutor's heartbeat. Returns the slots it holds that are freed
        here, for it to free; None tells it to register again."""
        if not self._heartbeats.receive_heartbeat(resource_id):
            return None
        before = self._slot_manager.free_slot_count()
        stale = self._slot_manager.heartbeat(resource_id, allocated, process)
        if self._slot_manager.free_slot_count() > before:
            self._serve_slot_requests()  # a releasing slot was let go
        if stale:
            logger.warning(
                "TaskManager %s still holds freed slots %s; telling it to free them",
                resource_id,
                stale,
            )
        return stale

    def task_managers(self) -> list[TaskManagerStatus]:
        return self._slot_manager.task_managers()

    def request_task_manager_file(
        self, resource_id: ResourceId, file_type: TaskManagerFileType, max_bytes: int
    ) -> TaskManagerFile:
        """A registered TaskManager's taskmanager.out or .log, asked of its TaskExecutor."""
        registration = self._slot_manager.get(resource_id)
        if registration is None:
            known = ", ".join(
                s.registration.resource_id for s in self._slot_manager.task_managers()
            )
            msg = (
                f"no registered TaskManager {resource_id!r}; the registered ones are: "
                f"{known or 'none'} (`weir logs` without --taskmanager shows them all)"
            )
            raise TaskManagerNotFoundError(msg)
        return self._gateways.request_file_upload(
            registration.rpc_address, file_type, max_bytes, _FILE_UPLOAD_TIMEOUT_S
        )

    # --- JobMaster side ------------------------------------------------------------------
    def set_leader_session(
        self, fencing_token: str | None, confirm: Callable[[str], bool] | None = None
    ) -> None:
        """The leader session this ResourceManager serves (None: it serves none, as
        after its leadership ended). JobMasters send theirs with every slot call.
        ``confirm(token)`` asks the source of truth (ZooKeeper) whether that session
        still leads; it is asked before a slot request may lease TaskManagers."""
        with self._lock:
            self._fenced = True
            self._leader_session = fencing_token
            if confirm is not None:
                self._confirm_session = confirm
            # A ResourceManager that does not lead leases nothing: its TaskManagers, and
            # those of the jobs it served, are the next leader's to lease.
            self._slot_manager.set_leading(fencing_token is not None)
        if fencing_token is None:
            logger.info("ResourceManager at %s no longer leads: it leases nothing", self._address)

    def suspend_leadership(self, suspended: bool) -> None:
        """Leadership in doubt (``True``: the ZooKeeper connection is suspended) or
        confirmed again: no lease starts while in doubt."""
        with self._lock:
            if self._leader_session is not None:
                self._slot_manager.set_leading(not suspended)

    def _leads(self) -> bool:
        """Whether this ResourceManager's leadership is confirmed (always, without leader
        election). One ZooKeeper round trip: a deposed master (paused past its session,
        not yet told) must not lease TaskManagers for jobs its successor runs."""
        with self._lock:
            fenced, session, confirm = self._fenced, self._leader_session, self._confirm_session
        if not fenced:
            return True
        return session is not None and (confirm is None or confirm(session))

    def _ensure_minimum(self) -> None:
        """Lease TaskManagers up to resourcemanager.taskmanager.min, if this ResourceManager
        leads."""
        if self._leads():
            self._slot_manager.ensure_minimum()

    def _check_leading(self, job_id: JobId) -> None:
        """Raises LeaderLostError when this ResourceManager's leadership is not confirmed
        (``_leads``)."""
        if self._leads():
            return
        with self._lock:
            session = self._leader_session
        msg = (
            f"job {job_id}: this ResourceManager no longer leads (leader session "
            f"{(session or '-')[:8]} is over); no slot is given and no TaskManager leased"
        )
        raise LeaderLostError(msg)

    def check_fencing_token(self, job_id: str, fencing_token: str) -> None:
        """Raises LeaderLostError when a JobMaster's call comes from another leader
        session than this ResourceManager's: a deposed master's JobMaster must not take
        or free slots of the job its successor now runs. Without a session (a
        ResourceManager started without leader election) every call is served."""
        with self._lock:
            fenced, session = self._fenced, self._leader_session
        if not fenced or fencing_token == session:
            return
        msg = (
            f"job {job_id}: refused a call of a JobMaster of leader session "
            f"{fencing_token[:8] or '-'}: this ResourceManager serves session "
            f"{(session or '-')[:8]}; that JobMaster was deposed"
        )
        raise LeaderLostError(msg)

    def request_slots(self, request: SlotRequest) -> int:
        """Queue a request for ``count`` slots (leasing TaskManagers as needed); returns
        how many requests are ahead of it. The slots are allocated on their TaskExecutors
        and offered to the JobMaster when the request's turn comes. Raises
        SlotAllocationError at once when it can never be met."""
        if request.count < 1:
            msg = f"job {request.job_id} asked for {request.count} slots; ask for at least 1"
            raise SlotAllocationError(msg)
        self._check_leading(request.job_id)
        timeout_ms = request.timeout_ms or cfg.get(self._config, cfg.SLOT_REQUEST_TIMEOUT)
        # The JobMaster withdraws its request at its own timeout and gets the reason; the
        # queue drops it only well after, if that withdrawal never came.
        queued = dataclasses.replace(request, timeout_ms=timeout_ms + _QUEUE_GRACE_MS)
        ahead = self._slot_manager.request(queued)
        with self._lock:
            self._jobmaster_addresses[request.job_id] = request.jobmaster_address
        self._serve_slot_requests()
        return ahead

    def cancel_slot_request(self, job_id: JobId, request_id: str) -> str | None:
        """Withdraw a queued request; returns why it was not met, or None when it is not
        queued (its slots are already on their way to the JobMaster, or it is unknown)."""
        explanation = self._slot_manager.cancel(job_id, request_id)
        if explanation is not None:
            logger.info("job %s: slot request %s withdrawn", job_id, request_id)
            self._serve_slot_requests()  # the requests behind it may fit now
        return explanation

    def _serve_slot_requests(self) -> None:
        """Hand free slots to the queued requests, oldest first; the allocations and offers
        run on the slot workers. Called whenever slots or requests may have changed."""
        if self._closed:
            return
        for grant in self._slot_manager.match():  # it logs the grants, in order
            try:
                self._slot_workers.submit(self._deliver, grant)
            except RuntimeError:  # shutting down: the JobMasters are closing too
                return

    def _deliver(self, grant: SlotGrant) -> None:
        """Allocate a grant's slots on their TaskExecutors and offer them to the JobMaster;
        on a slot worker."""
        request = grant.request
        allocation_ids = [a.allocation_id for a in grant.slots]
        failure = self._allocate_on_task_executors(request, grant.slots)
        if failure is not None:
            resource_id, exc, unreachable = failure
            self._free_now(request.job_id, allocation_ids)
            self._slot_manager.requeue(grant)
            if unreachable:
                # Gone (its heartbeats would say so soon): declare it lost now and serve
                # the request from the others, or from new leases.
                self._task_manager_lost(
                    resource_id, f"unreachable when allocating a slot: {exc}", unresponsive=True
                )
                self._serve_slot_requests()
            else:
                # Its view differs from ours (a FreeSlot not yet through): the request waits
                # for the next round of the maintenance loop rather than hammering it.
                logger.warning(
                    "TaskManager %s refused a slot for job %s (%s); the request stays queued",
                    resource_id,
                    request.job_id,
                    exc,
                )
            return
        try:
            accepted, message = self._gateways.offer_slots(
                request.jobmaster_address,
                request.job_id,
                request.request_id,
                grant.slots,
                _CONTROL_RPC_TIMEOUT_S,
            )
        except WeirError as exc:
            accepted, message = False, str(exc)
        if not accepted:
            logger.info(
                "job %s: JobMaster %s did not take the slots of request %s (%s); freeing them",
                request.job_id,
                request.jobmaster_address,
                request.request_id,
                message,
            )
            self._free_now(request.job_id, allocation_ids)
            self._serve_slot_requests()

    def _allocate_on_task_executors(
        self, request: SlotRequest, assignments: tuple[SlotAssignment, ...]
    ) -> tuple[ResourceId, WeirError, bool] | None:
        """AllocateSlot on each TaskExecutor. Returns the first that failed, its error, and
        whether it was unreachable (rather than refusing)."""
        for slot in assignments:
            try:
                self._gateways.allocate_slot(
                    slot.rpc_address,
                    slot.allocation_id,
                    request.job_id,
                    request.jobmaster_address,
                    _CONTROL_RPC_TIMEOUT_S,
                )
            except (ServiceUnavailableError, RemoteTimeoutError) as exc:
                return slot.resource_id, exc, True
            except WeirError as exc:
                return slot.resource_id, exc, False
        return None

    def release_slots(self, job_id: JobId, allocation_ids: list[AllocationId]) -> None:
        """Free the job's slots (all of them, and its queued requests, when
        ``allocation_ids`` is empty). Returns at once: the FreeSlot calls run on the slot
        workers, and each slot is handed out again once its TaskExecutor let it go."""
        if not allocation_ids:
            # The job ended (or restarts and asks again): its queued requests go, and so
            # does the channel to its JobMaster (a new JobMaster has a new address).
            self._slot_manager.cancel_job(job_id)
            with self._lock:
                address = self._jobmaster_addresses.pop(job_id, None)
            if address is not None:
                self._gateways.forget(address)
        freed = self._slot_manager.free(job_id, allocation_ids)
        if not freed:
            return
        try:
            self._slot_workers.submit(self._free_on_task_executors, freed)
        except RuntimeError:  # shutting down: close() stops the TaskExecutors anyway
            return

    def _free_now(self, job_id: JobId, allocation_ids: list[AllocationId]) -> None:
        self._free_on_task_executors(self._slot_manager.free(job_id, allocation_ids))

    def _free_on_task_executors(
        self, freed: list[tuple[AllocationId, TaskManagerRegistration]]
    ) -> None:
        for allocation_id, registration in freed:
            released = True
            try:
                if not self._heartbeats.is_monitored(registration.resource_id):
                    continue  # lost or released: its slots went with it
                released = self._gateways.free_slot(
                    registration.rpc_address, allocation_id, _CONTROL_RPC_TIMEOUT_S
                )
            except WeirError as exc:
                # A TaskExecutor we cannot reach is either gone (its lease ending tells
                # us) or, if it still holds the slot, learns from its next heartbeat. While
                # the cluster shuts down, its TaskExecutors stopping first is expected.
                logger.log(
                    logging.DEBUG if self._closed else logging.WARNING,
                    "FreeSlot %s on TaskManager %s failed: %s",
                    allocation_id,
                    registration.resource_id,
                    exc,
                )
            finally:
                if released:
                    self._slot_manager.confirm_freed(registration.resource_id, allocation_id)
                else:
                    # Its tasks are still ending: the slot stays taken until the
                    # TaskExecutor says it is available (or stops reporting it), and the
                    # queue no longer counts on it (the serve below leases for it).
                    self._slot_manager.slot_releasing(registration.resource_id, allocation_id)
                    logger.info(
                        "slot %s on TaskManager %s is releasing: its tasks are still ending",
                        allocation_id,
                        registration.resource_id,
                    )
        self._serve_slot_requests()

    def slot_available(self, resource_id: ResourceId, allocation_id: AllocationId) -> None:
        """A RELEASING slot's tasks ended on its TaskExecutor: it may be handed out."""
        logger.info("slot %s on TaskManager %s is available again", allocation_id, resource_id)
        self._slot_manager.confirm_freed(resource_id, allocation_id)
        self._serve_slot_requests()

    # --- loss and release ----------------------------------------------------------------
    def _maintenance_loop(self) -> None:
        # Check often enough to notice a loss soon after heartbeat.timeout, without
        # spinning when the timeout is long.
        period_s = max(0.05, min(self._heartbeat_interval_ms, self._heartbeat_timeout_ms) / 4000)
        next_minimum_check = time.monotonic() + _MINIMUM_CHECK_PERIOD_S
        while not self._stopped.wait(period_s):
            for resource_id in self._heartbeats.expired():
                self._task_manager_lost(
                    resource_id,
                    f"no heartbeat for {self._heartbeat_timeout_ms} ms",
                    unresponsive=True,
                )
            for expired in self._slot_manager.expire():
                logger.warning(
                    "job %s: slot request %s dropped from the queue after %d ms; its "
                    "JobMaster did not withdraw it",
                    expired.job_id,
                    expired.request_id,
                    expired.timeout_ms,
                )
            if time.monotonic() >= next_minimum_check:
                next_minimum_check = time.monotonic() + _MINIMUM_CHECK_PERIOD_S
                self._ensure_minimum()
            # Also the retry of a request a TaskExecutor refused.
            self._serve_slot_requests()
            for resource_id in self._slot_manager.idle_task_managers():
                registration = self._slot_manager.mark_releasing(resource_id)
                if registration is not None:
                    self._background.submit(self._release, registration, "idle")

    def _on_lease_ended(self, ended: LeaseEnded) -> None:
        # One that ended before its TaskManager registered is logged there, with its error.
        resource_id = self._slot_manager.lease_ended(ended.lease_id, ended.error)
        if resource_id is not None:
            reason = f"its Spark job ended ({ended.error or 'returned: ' + ended.result})"
            self._task_manager_lost(resource_id, reason)
            return
        logger.debug(
            "lease %s ended after %d ms: %s",
            ended.lease_id,
            ended.duration_ms,
            ended.result or ended.error,
        )
        # A lease that ended before it registered leaves room for another.
        self._serve_slot_requests()

    def _task_manager_lost(
        self, resource_id: ResourceId, reason: str, *, unresponsive: bool = False
    ) -> None:
        """Drop a TaskManager, tell the JobMasters that held its slots, end its lease and
        lease a replacement if the minimum is no longer met. ``unresponsive``: it missed
        its heartbeats, so a Stop call would only wait out its timeout; its Spark job is
        cancelled at once."""
        registration = self._slot_manager.get(resource_id)
        held = self._slot_manager.unregister(resource_id)
        self._heartbeats.unmonitor(resource_id)
        if registration is None:
            return
        logger.info(
            "TaskManager %s lost: %s (held slots of %d JobMasters)", resource_id, reason, len(held)
        )
        if registration.lease_id:
            with self._lock:
                self._ended_leases.add(registration.lease_id)
        if self._closed:
            return
        for jobmaster_address in held:
            self._background.submit(self._notify_lost, jobmaster_address, resource_id, reason)
        # It may still be alive (a long pause): make sure its lease ends. Until it does,
        # its Spark task may hold the executor core a replacement needs.
        self._background.submit(
            self._end_lease, registration, f"declared lost: {reason}", stop_first=not unresponsive
        )
        self._ensure_minimum()
        self._serve_slot_requests()

    def _notify_lost(self, jobmaster_address: str, resource_id: ResourceId, reason: str) -> None:
        try:
            self._gateways.notify_task_manager_lost(
                jobmaster_address, resource_id, reason, _CONTROL_RPC_TIMEOUT_S
            )
        except WeirError:
            # The JobMaster may be gone with its job; its own heartbeats catch the rest.
            logger.warning(
                "telling JobMaster %s that TaskManager %s is lost failed",
                jobmaster_address,
                resource_id,
                exc_info=True,
            )

    def _release(self, registration: TaskManagerRegistration, reason: str) -> None:
        """Release a TaskManager already marked as releasing."""
        self._end_lease(registration, reason)
        self._slot_manager.unregister(registration.resource_id)
        self._heartbeats.unmonitor(registration.resource_id)
        logger.info("TaskManager %s released (%s)", registration.resource_id, reason)

    def _end_lease(
        self, registration: TaskManagerRegistration, reason: str, *, stop_first: bool = True
    ) -> None:
        if stop_first:
            self._stop_remote(registration, reason)
        if not stop_first or not self._launcher.join(registration.lease_id, _STOP_GRACE_S):
            self._launcher.cancel(registration.lease_id)
        # A replacement may have registered at the same address (a pod's fixed port): its
        # calls use that channel, which closing would fail.
        address = registration.rpc_address
        if not any(
            status.registration.rpc_address == address
            and status.registration.resource_id != registration.resource_id
            for status in self._slot_manager.task_managers()
        ):
            self._gateways.forget(address)

    def _stop_remote(self, registration: TaskManagerRegistration, reason: str) -> None:
        try:
            self._gateways.stop_task_executor(
                registration.rpc_address, registration.resource_id, reason, _CONTROL_RPC_TIMEOUT_S
            )
        except WeirError as exc:
            # Unreachable: it is dead or dying; cancelling its Spark job is the fallback.
            logger.info(
                "Stop to TaskManager %s failed (%s); its Spark job will be cancelled",
                registration.resource_id,
                exc,
            )
