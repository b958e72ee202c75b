"""The ResourceManager: TaskManager registry, heartbeats, slots and Spark leases.

It is the Spark driver: TaskManagers are leased as long-running Spark tasks
(``SparkTaskManagerLauncher``), register here over gRPC and heartbeat; JobMasters ask it
for slots. Lifecycle (registered, lost, released) is logged at INFO with resource ids.

Example::

    with ResourceManager({"spark.master": "local[2]"}) as rm:
        address = rm.start()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from weir.core import config as cfg
from weir.core import rpc
from weir.core.errors import (
    RemoteTimeoutError,
    ServiceUnavailableError,
    SlotAllocationError,
    WeirError,
)
from weir.core.ids import AllocationId, JobId, ResourceId
from weir.resourcemanager import service
from weir.resourcemanager.heartbeat_monitor import HeartbeatMonitor
from weir.resourcemanager.slot_manager import (
    DefaultSlotManager,
    SlotAssignment,
    SlotRequest,
    TaskManagerRegistration,
    TaskManagerStatus,
)
from weir.resourcemanager.spark_launcher import (
    DEFAULT_ENTRY_POINT,
    LeaseEnded,
    SparkTaskManagerLauncher,
    create_spark_session,
)

if TYPE_CHECKING:
    import grpc
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)

# A TaskExecutor answers a control RPC (AllocateSlot, FreeSlot, Stop) at once; 10 s is
# far beyond that and still short next to slot.request.timeout.
_CONTROL_RPC_TIMEOUT_S = 10.0
# After a Stop RPC, a TaskExecutor cancels its tasks (they get a few seconds) and stops
# its servers with a 1 s grace; past this its Spark job is cancelled instead (which
# kills the Python worker some 3 s later).
_STOP_GRACE_S = 10.0
# How long close() waits for cancelled lease jobs to end before it gives up on them.
_CANCEL_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class RegistrationResult:
    accepted: bool
    message: str
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int


class ResourceManager:
    """The ResourceManager component; see the module docstring.

    ``spark_session``: None creates one from the ``spark.*`` keys (and stops it on close);
    a given session is reused and never stopped.
    """

    def __init__(
        self,
        config: Mapping[str, str],
        spark_session: SparkSession | None = None,
        *,
        entry_point: str = DEFAULT_ENTRY_POINT,
    ) -> None:
        self._config = dict(config)
        self._heartbeat_interval_ms = cfg.get(config, cfg.HEARTBEAT_INTERVAL)
        self._heartbeat_timeout_ms = cfg.get(config, cfg.HEARTBEAT_TIMEOUT)
        # The session comes first: gRPC's fork handlers must not see a server when the
        # JVM is launched.
        self._owns_spark = spark_session is None
        self._spark = spark_session if spark_session is not None else create_spark_session(config)
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
        )
        self._heartbeats: HeartbeatMonitor[ResourceId] = HeartbeatMonitor(
            self._heartbeat_timeout_ms
        )
        self._gateways = service.Gateways()
        # Lost-notices and releases run here, so neither the heartbeat check nor a
        # lease thread waits on another process.
        self._background = ThreadPoolExecutor(max_workers=4, thread_name_prefix="weir-rm")
        self._server: grpc.Server | None = None
        self._stopped = threading.Event()
        self._maintenance: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._registration_delays_ms: list[int] = []

    def _task_manager_config(self) -> dict[str, str]:
        # The TaskExecutor gets the whole configuration (plain strings, in the closure).
        return {k: str(v) for k, v in self._config.items()}

    # --- lifecycle -----------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start the gRPC server and lease ``resourcemanager.taskmanager.min`` TaskManagers;
        returns ``host:port``."""
        server = rpc.create_server()
        service.add_to_server(self, server)
        self._address = rpc.bind(server, host, port)
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
    def spark_session(self) -> SparkSession:
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

        ``stop_spark=False`` leaves a SparkSession this ResourceManager created to the
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
        deadline = time.monotonic() + _STOP_GRACE_S
        for lease_id in self._launcher.running_leases():
            self._launcher.join(lease_id, max(0.0, deadline - time.monotonic()))
        leftover = self._launcher.running_leases()
        for lease_id in leftover:
            self._launcher.cancel(lease_id)
        deadline = time.monotonic() + _CANCEL_WAIT_S
        for lease_id in leftover:
            if not self._launcher.join(lease_id, max(0.0, deadline - time.monotonic())):
                logger.warning("the Spark job of lease %s did not end after cancellation", lease_id)
        self._background.shutdown(wait=True)
        if self._server is not None:
            rpc.stop_server(self._server, 1.0)
        self._gateways.close()
        if self._owns_spark and stop_spark:
            self._spark.stop()
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
        return result(True, "registered")

    def heartbeat(
        self,
        resource_id: ResourceId,
        allocated: list[AllocationId],
    ) -> list[AllocationId] | None:
        """Record a TaskExecutor's heartbeat. Returns the slots it holds that are freed
        here, for it to free; None tells it to register again."""
        if not self._heartbeats.receive_heartbeat(resource_id):
            return None
        stale = self._slot_manager.heartbeat(resource_id, allocated)
        if stale:
            logger.warning(
                "TaskManager %s still holds freed slots %s; telling it to free them",
                resource_id,
                stale,
            )
        return stale

    def task_managers(self) -> list[TaskManagerStatus]:
        return self._slot_manager.task_managers()

    # --- JobMaster side ------------------------------------------------------------------
    def request_slots(self, request: SlotRequest) -> list[SlotAssignment]:
        """Reserve ``count`` slots (leasing TaskManagers as needed) and allocate them on
        their TaskExecutors. Raises SlotAllocationError."""
        if request.count < 1:
            msg = f"job {request.job_id} asked for {request.count} slots; ask for at least 1"
            raise SlotAllocationError(msg)
        timeout_ms = request.timeout_ms or cfg.get(self._config, cfg.SLOT_REQUEST_TIMEOUT)
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            remaining_ms = max(1, int((deadline - time.monotonic()) * 1000))
            assignments = self._slot_manager.reserve(
                SlotRequest(request.job_id, request.count, request.jobmaster_address, remaining_ms)
            )
            unreachable = self._allocate_on_task_executors(request, assignments)
            if unreachable is None:
                break
            # A TaskManager we cannot reach is gone (its heartbeats would say so soon):
            # declare it lost now and serve the request from the others, or new leases.
            resource_id, exc = unreachable
            self._task_manager_lost(resource_id, f"unreachable when allocating a slot: {exc}")
            if time.monotonic() >= deadline:
                msg = (
                    f"job {request.job_id}: no reachable TaskManager for {request.count} "
                    f"slots within {timeout_ms} ms (last: {exc}); raise slot.request.timeout"
                )
                raise SlotAllocationError(msg) from exc
        logger.info(
            "job %s got %d slots on %s",
            request.job_id,
            len(assignments),
            sorted({a.resource_id for a in assignments}),
        )
        return assignments

    def _allocate_on_task_executors(
        self, request: SlotRequest, assignments: list[SlotAssignment]
    ) -> tuple[ResourceId, WeirError] | None:
        """AllocateSlot on each TaskExecutor. Returns the first unreachable TaskManager
        (the reservation is then released); raises SlotAllocationError on a refusal."""
        try:
            for slot in assignments:
                self._gateways.allocate_slot(
                    slot.rpc_address,
                    slot.allocation_id,
                    request.job_id,
                    request.jobmaster_address,
                    _CONTROL_RPC_TIMEOUT_S,
                )
        except (ServiceUnavailableError, RemoteTimeoutError) as exc:
            self.release_slots(request.job_id, [a.allocation_id for a in assignments])
            return slot.resource_id, exc
        except WeirError as exc:
            self.release_slots(request.job_id, [a.allocation_id for a in assignments])
            msg = (
                f"job {request.job_id}: allocating {request.count} slots failed because a "
                f"TaskExecutor refused: {exc}; retry the request"
            )
            raise SlotAllocationError(msg) from exc
        return None

    def release_slots(self, job_id: JobId, allocation_ids: list[AllocationId]) -> None:
        for allocation_id, registration in self._slot_manager.free(job_id, allocation_ids):
            try:
                self._gateways.free_slot(
                    registration.rpc_address, allocation_id, _CONTROL_RPC_TIMEOUT_S
                )
            except WeirError:
                # A TaskExecutor we cannot reach is either gone (its lease ending tells
                # us) or, if it still holds the slot, learns from its next heartbeat.
                logger.warning(
                    "FreeSlot %s on TaskManager %s failed",
                    allocation_id,
                    registration.resource_id,
                    exc_info=True,
                )
            finally:
                self._slot_manager.confirm_freed(registration.resource_id, allocation_id)

    # --- loss and release ----------------------------------------------------------------
    def _maintenance_loop(self) -> None:
        # Check often enough to notice a loss soon after heartbeat.timeout, without
        # spinning when the timeout is long.
        period_s = max(0.05, min(self._heartbeat_interval_ms, self._heartbeat_timeout_ms) / 4000)
        while not self._stopped.wait(period_s):
            for resource_id in self._heartbeats.expired():
                self._task_manager_lost(
                    resource_id, f"no heartbeat for {self._heartbeat_timeout_ms} ms"
                )
            for resource_id in self._slot_manager.idle_task_managers():
                registration = self._slot_manager.mark_releasing(resource_id)
                if registration is not None:
                    self._background.submit(self._release, registration, "idle")

    def _on_lease_ended(self, ended: LeaseEnded) -> None:
        resource_id = self._slot_manager.lease_ended(ended.lease_id)
        if resource_id is not None:
            reason = f"its Spark job ended ({ended.error or 'returned: ' + ended.result})"
            self._task_manager_lost(resource_id, reason)
        elif ended.error is not None and not self._closed:
            logger.info(
                "lease %s ended after %d ms: %s", ended.lease_id, ended.duration_ms, ended.error
            )
        else:
            logger.debug("lease %s ended: %s", ended.lease_id, ended.result or ended.error)

    def _task_manager_lost(self, resource_id: ResourceId, reason: str) -> None:
        registration = self._slot_manager.get(resource_id)
        held = self._slot_manager.unregister(resource_id)
        self._heartbeats.unmonitor(resource_id)
        if registration is None:
            return
        logger.info(
            "TaskManager %s lost: %s (held slots of %d JobMasters)", resource_id, reason, len(held)
        )
        if self._closed:
            return
        for jobmaster_address in held:
            self._background.submit(self._notify_lost, jobmaster_address, resource_id, reason)
        # It may still be alive (a long pause): make sure its lease ends.
        self._background.submit(self._end_lease, registration, f"declared lost: {reason}")

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

    def _end_lease(self, registration: TaskManagerRegistration, reason: str) -> None:
        self._stop_remote(registration, reason)
        if not self._launcher.join(registration.lease_id, _STOP_GRACE_S):
            self._launcher.cancel(registration.lease_id)
        self._gateways.forget(registration.rpc_address)

    def _stop_remote(self, registration: TaskManagerRegistration, reason: str) -> None:
        try:
            self._gateways.stop_task_executor(
                registration.rpc_address, reason, _CONTROL_RPC_TIMEOUT_S
            )
        except WeirError as exc:
            # Unreachable: it is dead or dying; cancelling its Spark job is the fallback.
            logger.info(
                "Stop to TaskManager %s failed (%s); its Spark job will be cancelled",
                registration.resource_id,
                exc,
            )
