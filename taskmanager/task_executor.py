"""The TaskExecutor: the slots and tasks of one TaskManager, its heartbeats to the
ResourceManager and its state reports to JobMasters.

Lifecycle: ``start()`` opens the network environment and the gRPC server and registers
with the ResourceManager; ``wait()`` blocks until a Stop RPC, a lost ResourceManager
(no successful heartbeat for ``heartbeat.timeout``), a failed data plane or ``stop()``;
``close()`` cancels the tasks and leaves no thread, socket, server or working directory
behind (a Spark Python worker is reused for later tasks). Anything may call ``stop()``;
``close()`` belongs to the thread that started it.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING

from weir.core import config as cfg
from weir.core import rpc, s3_settings
from weir.core.addresses import local_address_towards
from weir.core.checkpoint import CheckpointType
from weir.core.deployment import TaskDeploymentDescriptor
from weir.core.errors import (
    SlotAllocationError,
    TaskManagerLostError,
    WeirError,
)
from weir.core.ids import AllocationId, ExecutionAttemptId, JobId, ResourceId, new_resource_id
from weir.core.print_target import local_print_target
from weir.core.security import SecurityConfig
from weir.core.task_manager_files import TaskManagerFile, TaskManagerFileType
from weir.taskmanager import service, user_system_exit
from weir.taskmanager.job_master_responders import (
    CheckpointResponder,
    CollectResponder,
    EndOfData,
    JobMasterConnection,
    KvStateRegistrar,
    StateUpdate,
    TaskStateReporter,
)
from weir.taskmanager.job_resources import JobResources, JobResourceTable, job_task_thread
from weir.taskmanager.log_files import log_directory, read_file_tail
from weir.taskmanager.mailbox import MailboxClosedError
from weir.taskmanager.network import DefaultNetworkEnvironment, NetworkConfig, NetworkEnvironment
from weir.taskmanager.queryablestate import (
    KvStateRegistry,
    KvStateServer,
)
from weir.taskmanager.task import Task
from weir.taskmanager.task_canceler import TaskCancelerWatchDog, cancellation_settings
from weir.taskmanager.task_errors import TaskCanceledError
from weir.taskmanager.task_manager_metrics import TaskManagerMetrics
from weir.taskmanager.task_services import TaskServices
from weir.taskmanager.working_directory import WorkingDirectory, remove_abandoned

if TYPE_CHECKING:
    import grpc

logger = logging.getLogger(__name__)

# Remembered cancels of tasks not yet deployed; far more than a job has subtasks in flight.
_MAX_EARLY_CANCELS = 4096

PRINT_TARGET_KEY = "weir.internal.print-target"
# Control RPCs to the ResourceManager answer at once; a heartbeat that takes longer than
# this is as good as missed (the next one is due anyway).
_RPC_TIMEOUT_S = 10.0
# A cancelled task releases its partitions and wakes its gate, so it ends promptly;
# user code stuck outside Weir may not, and close() must not hang on it forever.
_TASK_CANCEL_WAIT_S = 5.0
# The last state updates (CANCELED, FAILED) matter to the JobMaster; close() gives the
# sender this long to deliver what is queued.
_REPORT_DRAIN_S = 10.0
_CLEANUP_JOIN_S = 5.0
_GRPC_STOP_GRACE_S = 1.0

NetworkFactory = Callable[[ResourceId, str, NetworkConfig], NetworkEnvironment]


def default_network(
    resource_id: ResourceId, host: str, config: NetworkConfig
) -> NetworkEnvironment:
    """One DefaultNetworkEnvironment per TaskExecutor."""
    return DefaultNetworkEnvironment(resource_id, host, config)


@dataclass(frozen=True, slots=True)
class TaskExecutorConfig:
    host: str
    """Advertised (``taskmanager.host``); empty: found towards the ResourceManager."""
    num_slots: int
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int
    tmp_dir: str
    network: NetworkConfig
    intercept_user_system_exit: str = cfg.INTERCEPT_USER_SYSTEM_EXIT.default
    bind_host: str = ""
    """``taskmanager.bind-host``; empty: the advertised host."""
    rpc_ports: tuple[int, int] = (0, 0)
    cleanup_interval_ms: int = cfg.WORKING_DIRECTORY_CLEANUP_INTERVAL.default

    @classmethod
    def from_config(cls, entries: Mapping[str, str]) -> TaskExecutorConfig:
        return cls(
            host=cfg.get(entries, cfg.TASKMANAGER_HOST),
            num_slots=cfg.get(entries, cfg.NUM_TASK_SLOTS),
            heartbeat_interval_ms=cfg.get(entries, cfg.HEARTBEAT_INTERVAL),
            heartbeat_timeout_ms=cfg.get(entries, cfg.HEARTBEAT_TIMEOUT),
            tmp_dir=cfg.get(entries, cfg.TASKMANAGER_TMP_DIR).split(",")[0].strip(),
            network=NetworkConfig(
                security=SecurityConfig.from_config(entries),
                data_ports=cfg.get(entries, cfg.TASKMANAGER_DATA_PORT),
                segment_size=cfg.get(entries, cfg.SEGMENT_SIZE),
                buffers_per_channel=cfg.get(entries, cfg.BUFFERS_PER_CHANNEL),
                floating_buffers_per_gate=cfg.get(entries, cfg.FLOATING_BUFFERS_PER_GATE),
                max_buffers_per_subpartition=cfg.get(entries, cfg.MAX_BUFFERS_PER_SUBPARTITION),
                handshake_timeout_ms=cfg.get(entries, cfg.HANDSHAKE_TIMEOUT),
                max_unauthenticated_connections_per_host=cfg.get(
                    entries, cfg.MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST
                ),
                max_unauthenticated_connections=cfg.get(
                    entries, cfg.MAX_UNAUTHENTICATED_CONNECTIONS
                ),
            ),
            intercept_user_system_exit=cfg.get(entries, cfg.INTERCEPT_USER_SYSTEM_EXIT),
            bind_host=cfg.get(entries, cfg.TASKMANAGER_BIND_HOST),
            rpc_ports=cfg.get(entries, cfg.TASKMANAGER_RPC_PORT),
            cleanup_interval_ms=cfg.get(entries, cfg.WORKING_DIRECTORY_CLEANUP_INTERVAL),
        )


@dataclass(slots=True)
class _Slot:
    """A slot of this TaskManager (Flink's TaskSlot). ALLOCATED until freed; a freed slot
    whose tasks are still ending is RELEASING (``releasing``): it holds its place, so no
    other job's task is deployed beside a task that has not ended, until its last task
    ends, when it is gone and the ResourceManager hears that it is available."""

    job_id: JobId
    jobmaster_address: str
    tasks: set[ExecutionAttemptId] = field(default_factory=set)
    releasing: bool = False


@dataclass(frozen=True, slots=True)
class _SlotAvailable:
    """For the report thread: tell the ResourceManager that a RELEASING slot is free."""

    allocation_id: AllocationId


class TaskExecutor:
    """One TaskManager; see the module docstring.

    ``spark_task_info`` describes the Spark task hosting it (sent as the registration's
    executor field). ``network_factory`` builds the NetworkEnvironment (the default one
    unless a test injects another).
    """

    def __init__(
        self,
        config: Mapping[str, str],
        rm_address: str,
        lease_id: str = "",
        *,
        spark_task_info: str = "",
        network_factory: NetworkFactory = default_network,
        resource_id: ResourceId | None = None,
    ) -> None:
        self.config = TaskExecutorConfig.from_config(config)
        self._config = dict(config)
        s3_settings.configure(config)
        self.resource_id = resource_id or new_resource_id()
        self.lease_id = lease_id
        self._spark_task_info = spark_task_info
        self._network_factory = network_factory
        self._security = self.config.network.security
        self._rm = service.ResourceManagerGateway(rm_address, self._security)
        self._jobmasters = service.JobMasterGateways(self._security)
        self._heartbeat_interval_s = self.config.heartbeat_interval_ms / 1000
        self._heartbeat_timeout_s = self.config.heartbeat_timeout_ms / 1000
        self._lock = threading.Lock()
        self._slots: dict[AllocationId, _Slot] = {}
        self._tasks: dict[ExecutionAttemptId, tuple[Task, AllocationId]] = {}
        # Cancels that arrived before their task (a JobMaster cancels while a SubmitTask
        # is still in flight): the task is cancelled as soon as it arrives. Bounded.
        self._cancelled_early: collections.OrderedDict[ExecutionAttemptId, None] = (
            collections.OrderedDict()
        )
        self._stop_requested = threading.Event()
        self._stop_reason = ""
        self._closed = False
        self._registered = False
        self._network: NetworkEnvironment | None = None
        self._server: grpc.Server | None = None
        self._heartbeat_thread: threading.Thread | None = None
        self._cleanup_thread: threading.Thread | None = None
        self._reports: queue.Queue[StateUpdate | EndOfData | _SlotAvailable | None] = queue.Queue()
        self._reporter: threading.Thread | None = None
        self.host = self.config.host
        """The address advertised to the cluster (known once started)."""
        self.rpc_address = ""
        self.data_port = 0
        self.working_dir = ""
        self._working_directory: WorkingDirectory | None = None
        self._job_resources: JobResourceTable | None = None
        self.metrics = TaskManagerMetrics(
            self.resource_id,
            self.config.host,
            self._config,
            self._buffers_in_use,
            security=self._security,
        )
        # Queryable state (queryable-state.enable): the registry of this TaskManager's
        # queryable states and the server that reads them.
        self.kv_state_registry = KvStateRegistry()
        self.kv_state_server: KvStateServer | None = None
        if cfg.get(self._config, cfg.QUERYABLE_STATE_ENABLE):
            self.kv_state_server = KvStateServer(
                self.kv_state_registry, self._security, self._thread_name("kv-state")
            )

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Open the network and the gRPC server and register with the ResourceManager.
        Raises TaskManagerLostError if the ResourceManager cannot be reached within
        ``heartbeat.timeout`` (everything opened is closed again)."""
        try:
            user_system_exit.install(self.config.intercept_user_system_exit)
            self._working_directory = WorkingDirectory.create(
                self.resource_id, self.config.tmp_dir or None
            )
            self.working_dir = self._working_directory.path
            remove_abandoned(self.config.tmp_dir or None)
            self._job_resources = JobResourceTable(self.working_dir)
            self.host = self.config.host or local_address_towards(self._rm.address)
            bind_host = self.config.bind_host or self.host
            network = self._network_factory(self.resource_id, bind_host, self.config.network)
            self._network = network
            self.data_port = network.start(self._on_network_failure)
            server = rpc.create_server(security=self._security, name=self._thread_name("rpc"))
            service.add_to_server(self, server)
            self.rpc_address = rpc.bind_in_range(
                server,
                bind_host,
                self.config.rpc_ports,
                port_key=cfg.TASKMANAGER_RPC_PORT.key,
                advertise=self.host,
            )
            server.start()
            self._server = server
            self.metrics.start(self.host)
            if self.kv_state_server is not None:
                self.kv_state_server.start(
                    self.host, cfg.get(self._config, cfg.QUERYABLE_STATE_SERVER_PORTS)
                )
            self._reporter = threading.Thread(
                target=self._send_reports, name=self._thread_name("state-reports"), daemon=True
            )
            self._reporter.start()
            self._register_until_deadline()
            self._heartbeat_thread = threading.Thread(
                target=self._heartbeat_loop, name=self._thread_name("heartbeat"), daemon=True
            )
            self._heartbeat_thread.start()
            self._cleanup_thread = threading.Thread(
                target=self._remove_abandoned_loop, name=self._thread_name("cleanup"), daemon=True
            )
            self._cleanup_thread.start()
        except BaseException:
            self.close()
            raise

    def _thread_name(self, role: str) -> str:
        """The name of a thread this TaskExecutor owns: its role and the TaskManager's id,
        as the network's I/O thread is named, so that a thread dump (or a test) tells the
        threads of one TaskExecutor from those of anything else in the process."""
        return f"weir-tm-{role}-{self.resource_id[:8]}"

    def _register_until_deadline(self) -> None:
        deadline = time.monotonic() + self._heartbeat_timeout_s
        while True:
            try:
                self._register()
                return
            except TaskManagerLostError:
                # Refused (the ResourceManager shuts down, or ended this lease): asking
                # again gets the same answer, so the lease ends now, as it does when a
                # heartbeat is refused.
                raise
            except WeirError as exc:
                if time.monotonic() >= deadline or self._stop_requested.is_set():
                    msg = (
                        f"TaskManager {self.resource_id} could not register with the "
                        f"ResourceManager at {self._rm.address} within "
                        f"{self.config.heartbeat_timeout_ms} ms: {exc}; is it running?"
                    )
                    raise TaskManagerLostError(msg) from exc
            self._stop_requested.wait(min(self._heartbeat_interval_s, 0.5))

    def _register(self) -> None:
        assert self._network is not None
        answer = self._rm.register(
            resource_id=self.resource_id,
            rpc_address=self.rpc_address,
            data_host=self.host,
            data_port=self.data_port,
            num_slots=self.config.num_slots,
            spark_executor_id=self._spark_task_info,
            pid=os.getpid(),
            lease_id=self.lease_id,
            timeout_s=_RPC_TIMEOUT_S,
        )
        if not answer.accepted:
            msg = f"the ResourceManager refused TaskManager {self.resource_id}: {answer.message}"
            raise TaskManagerLostError(msg)
        # The ResourceManager's heartbeat settings win: it judges the timeout.
        if answer.heartbeat_interval_ms > 0:
            self._heartbeat_interval_s = answer.heartbeat_interval_ms / 1000
        if answer.heartbeat_timeout_ms > 0:
            self._heartbeat_timeout_s = answer.heartbeat_timeout_ms / 1000
        self._registered = True
        logger.info(
            "TaskManager %s registered with the ResourceManager at %s (rpc %s, data %d)",
            self.resource_id,
            self._rm.address,
            self.rpc_address,
            self.data_port,
        )

    def _on_network_failure(self, reason: str) -> None:
        """The data plane's fatal error handler (on its I/O thread, as it ends). Without
        it this TaskManager can neither send its tasks' output nor read their input, yet
        it would go on heart-beating: it stops instead, so that its lease ends and the
        ResourceManager replaces it, and its tasks' jobs fail over elsewhere."""
        logger.error(
            "TaskManager %s lost its data plane (%s); stopping so that it is replaced",
            self.resource_id,
            reason,
        )
        self.stop(f"its data plane failed: {reason}")

    def request_file_upload(
        self, file_type: TaskManagerFileType, max_bytes: int
    ) -> TaskManagerFile:
        """The end of this TaskManager's ``taskmanager.out`` or ``.log`` (Flink's
        requestFileUploadByType); read on the calling (gRPC) thread."""
        return read_file_tail(log_directory(self._config, self.resource_id), file_type, max_bytes)

    def stop(self, reason: str) -> None:
        """Ask the TaskExecutor to stop; ``wait()`` returns. Thread-safe, idempotent."""
        with self._lock:
            if self._stop_requested.is_set():
                return
            self._stop_reason = reason
        logger.info("TaskManager %s stopping: %s", self.resource_id, reason)
        self._stop_requested.set()

    def wait(self, timeout: float | None = None) -> str | None:
        """Block until a stop is requested; returns its reason (None on timeout)."""
        if not self._stop_requested.wait(timeout):
            return None
        return self._stop_reason

    @property
    def stopped(self) -> bool:
        return self._stop_requested.is_set()

    def close(self) -> None:
        """Cancel every task and close the server, the network, the channels and the
        working directory. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._stop_requested.is_set():
                self._stop_reason = "closed"
            tasks = [task for task, _ in self._tasks.values()]
        self._stop_requested.set()
        if self._heartbeat_thread is not None:
            self._heartbeat_thread.join()
        if self._cleanup_thread is not None:  # a sweep under way is not waited for long
            self._cleanup_thread.join(_CLEANUP_JOIN_S)
        for task in tasks:
            task.cancel()
        for task in tasks:
            if not task.join(_TASK_CANCEL_WAIT_S):
                logger.warning(
                    "task %s did not end %.0f s after cancel",
                    task.tdd.task_name,
                    _TASK_CANCEL_WAIT_S,
                )
        if self._server is not None:
            rpc.stop_server(self._server, _GRPC_STOP_GRACE_S)
        self.metrics.close()
        if self.kv_state_server is not None:
            self.kv_state_server.close()
        if self._network is not None:
            self._network.close()
        if self._reporter is not None:
            self._reports.put(None)
            self._reporter.join(_REPORT_DRAIN_S)
        self._jobmasters.close()
        self._rm.close()
        if self._job_resources is not None:  # every job leaves with the TaskManager
            for job_id in self._job_resources.jobs():
                resources = self._job_resources.detach(job_id)
                if resources is not None:
                    JobResourceTable.release(resources)
        if self._working_directory is not None:
            self._working_directory.close()
        logger.info("TaskManager %s closed (%s)", self.resource_id, self._stop_reason)

    def __enter__(self) -> TaskExecutor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _remove_abandoned_loop(self) -> None:
        """The start's sweep of killed siblings' working directories, repeated: one
        killed as this TaskManager started may not have let go of its lock yet. Its own
        thread, as removing a dead RocksDB instance may take longer than a heartbeat."""
        interval_s = self.config.cleanup_interval_ms / 1000
        while not self._stop_requested.wait(interval_s):
            try:
                remove_abandoned(self.config.tmp_dir or None)
            except OSError as exc:
                logger.warning("could not remove abandoned working directories: %s", exc)

    # --- heartbeats --------------------------------------------------------------------------
    def _heartbeat_loop(self) -> None:
        last_ok = time.monotonic()
        while not self._stop_requested.wait(self._heartbeat_interval_s):
            try:
                if self._registered:
                    stale = self._rm.heartbeat(
                        self.resource_id,
                        self.allocated_slots(),
                        min(_RPC_TIMEOUT_S, self._heartbeat_timeout_s),
                    )
                    if stale is None:
                        self._forget_everything("the ResourceManager no longer knows it")
                        self._register()
                    for allocation_id in stale or ():
                        logger.warning(
                            "slot %s was freed by the ResourceManager but its "
                            "FreeSlot never arrived; freeing it",
                            allocation_id,
                        )
                        self.free_slot(allocation_id)
                else:
                    self._register()
                last_ok = time.monotonic()
            except TaskManagerLostError as exc:  # the ResourceManager refused it
                self.stop(str(exc))
                return
            except WeirError as exc:
                silent_s = time.monotonic() - last_ok
                if silent_s > self._heartbeat_timeout_s:
                    self.stop(
                        f"lost the ResourceManager at {self._rm.address}: no successful "
                        f"heartbeat for {silent_s:.1f} s ({exc})"
                    )
                    return
                # The first miss is worth a warning; the ones after it only repeat it.
                first_miss = silent_s < 2 * self._heartbeat_interval_s
                logger.log(
                    logging.WARNING if first_miss else logging.DEBUG,
                    "heartbeat to the ResourceManager failed (%.1f s without one): %s",
                    silent_s,
                    exc,
                )

    def _forget_everything(self, reason: str) -> None:
        """The ResourceManager freed our slots (it declared us lost): drop them and their
        tasks before registering again."""
        logger.warning(
            "TaskManager %s: %s; cancelling its tasks and registering again",
            self.resource_id,
            reason,
        )
        with self._lock:
            self._registered = False
            tasks = [task for task, _ in self._tasks.values()]
            slots = list(self._slots.values())
            self._slots.clear()
        for task in tasks:
            self._cancel(task)
        for slot in slots:
            self._jobmasters.disconnect(slot.jobmaster_address)

    def allocated_slots(self) -> list[AllocationId]:
        """The slots that are taken: allocated, or releasing (their tasks still ending)."""
        with self._lock:
            return list(self._slots)

    def _cancel(self, task: Task) -> None:
        """Cancel ``task`` and watch that it ends (``task_canceler``): a task that keeps
        running is interrupted, and past ``task.cancellation.timeout`` the TaskManager
        exits."""
        if not task.cancel():
            return  # already cancelled (and watched) or ended
        settings = cancellation_settings(self._config, task.tdd.job_config)
        TaskCancelerWatchDog(
            task.tdd.task_name,
            task.thread,
            settings,
            TaskCanceledError,
            interruptible=lambda: task.interruptible,
            interrupt_lock=task.interrupt_lock,
        ).start()

    # --- slots and tasks (the RPC side) --------------------------------------------------------
    def allocate_slot(
        self, allocation_id: AllocationId, job_id: JobId, jobmaster_address: str
    ) -> None:
        with self._lock:
            existing = self._slots.get(allocation_id)
            if existing is not None and existing.job_id == job_id:
                return
            if existing is not None or len(self._slots) >= self.config.num_slots:
                msg = (
                    f"TaskManager {self.resource_id} cannot allocate slot {allocation_id} to "
                    f"job {job_id}: {len(self._slots)} of its {self.config.num_slots} slots "
                    "are taken; the ResourceManager's view is stale, ask it again"
                )
                raise SlotAllocationError(msg)
            self._slots[allocation_id] = _Slot(job_id, jobmaster_address)
            self._jobmasters.connect(jobmaster_address)
        logger.info("slot %s allocated to job %s", allocation_id, job_id)

    def free_slot(self, allocation_id: AllocationId) -> bool:
        """Free a slot (unknown slots are ignored). Returns True when it is free now; False
        when tasks are still in it: they are cancelled and the slot is RELEASING until the
        last one ends, when the ResourceManager is told it is available."""
        with self._lock:
            slot = self._slots.get(allocation_id)
            if slot is None:
                return True
            tasks = [self._tasks[a][0] for a in slot.tasks if a in self._tasks]
            if tasks:
                slot.releasing = True
            else:
                del self._slots[allocation_id]
        for task in tasks:
            self._cancel(task)
        if tasks:
            logger.info(
                "slot %s of job %s releasing: %d task(s) still ending",
                allocation_id,
                slot.job_id,
                len(tasks),
            )
            return False
        self._slot_gone(allocation_id, slot)
        return True

    def _slot_gone(self, allocation_id: AllocationId, slot: _Slot) -> None:
        # The job's channel closes with its last slot here.
        self._jobmasters.disconnect(slot.jobmaster_address)
        logger.info("slot %s of job %s freed", allocation_id, slot.job_id)
        self._release_jobs_that_left({slot.job_id})

    def submit_task(self, tdd: TaskDeploymentDescriptor, jobmaster_address: str) -> None:
        attempt = tdd.execution_attempt_id
        with self._lock:
            if self._stop_requested.is_set():
                msg = (
                    f"TaskManager {self.resource_id} is stopping; deploy {tdd.task_name} elsewhere"
                )
                raise TaskManagerLostError(msg)
            slot = self._slots.get(tdd.allocation_id)
            if slot is None or slot.job_id != tdd.job_id:
                msg = (
                    f"cannot deploy {tdd.task_name} of job {tdd.job_id} to TaskManager "
                    f"{self.resource_id}: slot {tdd.allocation_id} is not allocated to that "
                    "job here (freed, or the TaskManager re-registered); request slots again"
                )
                raise SlotAllocationError(msg)
            if attempt in self._tasks:
                msg = f"task attempt {attempt} ({tdd.task_name}) is already deployed here"
                raise WeirError(msg)
            assert self._job_resources is not None
            # Here, under the lock: a job with a task is never released, and a job id
            # that cannot name a directory fails the deployment, not the task thread.
            resources = self._job_resources.acquire(tdd.job_id)
            task = Task(tdd, self._services_for(tdd, jobmaster_address, resources))
            self._tasks[attempt] = (task, tdd.allocation_id)
            slot.tasks.add(attempt)
            cancelled = attempt in self._cancelled_early
            self._cancelled_early.pop(attempt, None)
        logger.info(
            "deploying %s (job %s, attempt %s) in slot %s",
            tdd.task_name,
            tdd.job_id,
            attempt,
            tdd.allocation_id,
        )
        if cancelled:  # it ends CANCELED at once and reports so
            task.cancel()
        task.start()

    def cancel_task(self, attempt_id: ExecutionAttemptId) -> bool:
        with self._lock:
            entry = self._tasks.get(attempt_id)
            if entry is None:
                self._cancelled_early[attempt_id] = None
                while len(self._cancelled_early) > _MAX_EARLY_CANCELS:
                    self._cancelled_early.popitem(last=False)
                return False
        self._cancel(entry[0])
        return True

    def trigger_checkpoint(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        timestamp_ms: int,
        checkpoint_type: CheckpointType = CheckpointType.CHECKPOINT,
        target_location: str = "",
        *,
        drain: bool = False,
    ) -> bool:
        """False when the task is not here (ended): the coordinator's plan is stale.
        ``target_location``: a savepoint's directory."""
        with self._lock:
            entry = self._tasks.get(attempt_id)
        if entry is None:
            return False
        try:
            entry[0].trigger_checkpoint(
                checkpoint_id, timestamp_ms, checkpoint_type, target_location, drain=drain
            )
        except MailboxClosedError:
            return False
        return True

    def notify_checkpoint(
        self, attempt_id: ExecutionAttemptId, checkpoint_id: int, complete: bool
    ) -> bool:
        with self._lock:
            entry = self._tasks.get(attempt_id)
        if entry is None:
            return False
        task = entry[0]
        try:
            if complete:
                task.notify_checkpoint_complete(checkpoint_id)
            else:
                task.notify_checkpoint_aborted(checkpoint_id)
        except MailboxClosedError:
            return False
        return True

    def running_tasks(self) -> list[ExecutionAttemptId]:
        with self._lock:
            return list(self._tasks)

    def _services_for(
        self, tdd: TaskDeploymentDescriptor, jobmaster_address: str, resources: JobResources
    ) -> TaskServices:
        """The task's links to this TaskExecutor and to its JobMaster
        (``weir.taskmanager.job_master_responders``)."""
        assert self._network is not None
        connection = JobMasterConnection(jobmaster_address, tdd.job_id, self._jobmasters)
        reporter = TaskStateReporter(connection, self._reports, self, self._task_ended)
        checkpoints = CheckpointResponder(connection, self)
        collect = CollectResponder(connection, tdd.execution_attempt_id, self, self._stop_requested)
        kv_states = KvStateRegistrar(
            connection, tdd, lambda: self.kv_state_server, self.kv_state_registry
        )
        return TaskServices(
            network=self._network,
            report_state=reporter.report_state,
            collect=collect.collect,
            # The client's stdout only on the client's host; else taskmanager.out.
            print_target=local_print_target(tdd.job_config.get(PRINT_TARGET_KEY)),
            acknowledge_checkpoint=checkpoints.acknowledge,
            decline_checkpoint=checkpoints.decline,
            end_of_data=reporter.end_of_data,
            task_thread=lambda: self._task_thread(tdd, resources),
            metric_group=self.metrics.task_group(tdd),
            register_kv_state=kv_states.register,
        )

    def task(self, attempt_id: ExecutionAttemptId) -> Task | None:
        """The running task of ``attempt_id`` (``TaskLookup`` of the responders)."""
        with self._lock:
            entry = self._tasks.get(attempt_id)
        return None if entry is None else entry[0]

    @staticmethod
    @contextlib.contextmanager
    def _task_thread(tdd: TaskDeploymentDescriptor, resources: JobResources) -> Iterator[None]:
        """Around a task, on its thread: its job's resources, exits refused (or not)."""
        with (
            job_task_thread(resources),
            user_system_exit.monitor_user_system_exit(tdd.task_name),
        ):
            yield

    def _release_jobs_that_left(self, job_ids: set[JobId]) -> None:
        """Give back the resources of those of ``job_ids`` with neither a slot nor a task
        here any more."""
        if self._job_resources is None:
            return
        with self._lock:
            present = {s.job_id for s in self._slots.values()}
            present.update(task.tdd.job_id for task, _ in self._tasks.values())
            left = [
                detached
                for job_id in job_ids - present
                if (detached := self._job_resources.detach(job_id)) is not None
            ]
        for resources in left:
            JobResourceTable.release(resources)

    def _buffers_in_use(self) -> int:
        """Network buffers the tasks here hold in their gates and partitions."""
        with self._lock:
            tasks = [task for task, _ in self._tasks.values()]
        used = 0
        for task in tasks:
            gate = task.input_gate
            used += gate.queued_buffers() if gate is not None else 0
            used += sum(p.queued_buffers() for p in task.result_partitions)
        return used

    def _task_ended(self, attempt_id: ExecutionAttemptId) -> None:
        released: _Slot | None = None
        with self._lock:
            entry = self._tasks.pop(attempt_id, None)
            if entry is not None:
                slot = self._slots.get(entry[1])
                if slot is not None:
                    slot.tasks.discard(attempt_id)
                    if slot.releasing and not slot.tasks:
                        released = self._slots.pop(entry[1])
        if entry is None:
            return
        self.kv_state_registry.unregister_attempt(attempt_id)
        group = entry[0].metric_group
        if group is not None:
            self.metrics.task_ended(entry[0].tdd, group)
        if released is not None:
            # On the task thread: the RPC goes out from the report thread.
            self._reports.put(_SlotAvailable(entry[1]))
            self._slot_gone(entry[1], released)
        else:
            self._release_jobs_that_left({entry[0].tdd.job_id})

    def _send_reports(self) -> None:
        while True:
            update = self._reports.get()
            if update is None:
                return
            if isinstance(update, EndOfData):
                try:
                    self._jobmasters.notify_end_of_data(
                        update.jobmaster_address,
                        job_id=update.job_id,
                        attempt_id=update.attempt_id,
                        timeout_s=_RPC_TIMEOUT_S,
                    )
                except WeirError:
                    # The final checkpoint then comes at the next interval instead.
                    logger.warning(
                        "telling JobMaster %s that %s reached its end of data failed",
                        update.jobmaster_address,
                        update.attempt_id,
                        exc_info=True,
                    )
                continue
            if isinstance(update, _SlotAvailable):
                try:
                    self._rm.notify_slot_available(
                        self.resource_id, update.allocation_id, _RPC_TIMEOUT_S
                    )
                except WeirError:
                    # The next heartbeat, which no longer reports the slot, says the same.
                    logger.warning(
                        "telling the ResourceManager that slot %s is available failed",
                        update.allocation_id,
                        exc_info=True,
                    )
                continue
            try:
                self._jobmasters.update_task_execution_state(
                    update.jobmaster_address,
                    job_id=update.job_id,
                    attempt_id=update.attempt_id,
                    state=update.state.value,
                    failure_cause=update.failure_cause,
                    io_metrics=update.io_metrics,
                    throwable_type=update.throwable_type,
                    timeout_s=_RPC_TIMEOUT_S,
                )
            except WeirError:
                # The JobMaster is gone or unreachable; it will see the task as lost
                # through its own failover. Nothing else can be done with the update.
                logger.warning(
                    "reporting %s of %s to JobMaster %s failed",
                    update.state.value,
                    update.attempt_id,
                    update.jobmaster_address,
                    exc_info=True,
                )
