"""What a task tells its JobMaster, one small class per concern (Flink's TaskExecutor gives
each job connection its ``TaskManagerActions``, ``CheckpointResponder`` and the like):

- ``TaskStateReporter``: execution states and the end of a task's data, queued for the
  TaskExecutor's one report thread, so that they reach the JobMaster in order and the
  task thread never waits on an RPC;
- ``CollectResponder``: ``execute_and_collect`` batches, pushed with back-off while the
  JobMaster's buffer is full (the back-pressure of a client that reads slowly);
- ``CheckpointResponder``: acknowledgements and declines of checkpoints;
- ``KvStateRegistrar``: queryable state, registered with this TaskManager's state server
  and announced to the JobMaster.

Each holds a ``JobMasterConnection`` (the JobMaster's address, the job, the gateways)
and is made per task by the TaskExecutor; each method says on which thread it runs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from weir.core.checkpoint import CheckpointMetrics, TaskStateSnapshot
from weir.core.deployment import ExecutionState, TaskDeploymentDescriptor
from weir.core.errors import RemoteTimeoutError, WeirError
from weir.core.ids import ExecutionAttemptId, JobId
from weir.core.job_info import IOMetricsInfo
from weir.core.throwable_classifier import ThrowableType
from weir.taskmanager.queryablestate import KvStateEntry, KvStateRegistration, KvStateRegistry
from weir.taskmanager.task_metrics import final_io_metrics

if TYPE_CHECKING:
    from weir.taskmanager.queryablestate import KvStateServer
    from weir.taskmanager.state.backend import KeyedStateBackend
    from weir.taskmanager.task import Task

logger = logging.getLogger(__name__)

# Control RPCs to the JobMaster answer at once; one that takes longer than this is as
# good as lost (a checkpoint expires, a state report is seen through failover instead).
RPC_TIMEOUT_S = 10.0
# A collect sink blocks while the JobMaster's buffer is full (back-pressure); this bounds
# how long a reader that stopped fetching can stall the task before it fails.
COLLECT_TIMEOUT_S = 300.0
# While the JobMaster's collect buffer stays full, the sink doubles its wait between
# pushes up to this: a reader that paused costs one push per half second, and one that
# resumes sees new results at most this much later.
COLLECT_MAX_BACKOFF_MS = 500


@dataclass(frozen=True, slots=True)
class JobMasterConnection:
    """A job's JobMaster as the TaskExecutor reaches it."""

    address: str
    job_id: JobId
    gateways: Any
    """``weir.taskmanager.service.JobMasterGateways``: the RPC stubs, by address."""


class TaskLookup(Protocol):
    """What the responders ask the TaskExecutor (any thread)."""

    def task(self, attempt_id: ExecutionAttemptId) -> Task | None:
        """The running task of ``attempt_id``; None once it ended."""


@dataclass(frozen=True, slots=True)
class StateUpdate:
    """For the report thread: a task's new execution state."""

    jobmaster_address: str
    job_id: JobId
    attempt_id: ExecutionAttemptId
    state: ExecutionState
    failure_cause: str | None
    io_metrics: IOMetricsInfo | None = None
    throwable_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR


@dataclass(frozen=True, slots=True)
class EndOfData:
    """For the report thread: a task reached the end of its input (FLIP-147)."""

    jobmaster_address: str
    job_id: JobId
    attempt_id: ExecutionAttemptId


class TaskStateReporter:
    """Queues a task's reports for the report thread (task thread: never blocks)."""

    def __init__(
        self,
        connection: JobMasterConnection,
        reports: queue.Queue[Any],
        tasks: TaskLookup,
        task_ended: Callable[[ExecutionAttemptId], None],
    ) -> None:
        self._connection = connection
        self._reports = reports
        self._tasks = tasks
        self._task_ended = task_ended

    def report_state(
        self,
        attempt_id: ExecutionAttemptId,
        state: ExecutionState,
        cause: str | None,
        throwable_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR,
        /,
    ) -> None:
        io_metrics = None
        if state.is_terminal:
            task = self._tasks.task(attempt_id)
            io_metrics = final_io_metrics(task) if task is not None else None
        c = self._connection
        self._reports.put(
            StateUpdate(c.address, c.job_id, attempt_id, state, cause, io_metrics, throwable_type)
        )
        if state.is_terminal:
            self._task_ended(attempt_id)

    def end_of_data(self, attempt_id: ExecutionAttemptId) -> None:
        c = self._connection
        self._reports.put(EndOfData(c.address, c.job_id, attempt_id))


class CollectResponder:
    """Pushes a task's collect batches to the JobMaster (task thread)."""

    def __init__(
        self,
        connection: JobMasterConnection,
        attempt_id: ExecutionAttemptId,
        tasks: TaskLookup,
        stopping: threading.Event,
    ) -> None:
        self._connection = connection
        self._attempt_id = attempt_id
        self._tasks = tasks
        self._stopping = stopping

    def collect(
        self, operator_id: str, subtask_index: int, batch: bytes, end: bool, epoch: int
    ) -> None:
        """The JobMaster answers "full, retry after N ms" at once; retrying here, backing
        off while it stays full, keeps the back-pressure on the task thread without
        losing the batch or holding a JobMaster thread."""
        c = self._connection
        deadline = time.monotonic() + COLLECT_TIMEOUT_S
        backoff_ms = 0
        while True:
            retry_after_ms = c.gateways.push_collect_batch(
                c.address,
                job_id=c.job_id,
                attempt_id=self._attempt_id,
                operator_id=operator_id,
                subtask_index=subtask_index,
                batch=batch,
                end=end,
                epoch=epoch,
                timeout_s=RPC_TIMEOUT_S,
            )
            if retry_after_ms is None:
                return
            task = self._tasks.task(self._attempt_id)
            if task is None or task.cancel_requested:
                return  # the task is ending; its batches are not wanted any more
            if time.monotonic() >= deadline:
                msg = (
                    f"the client of execute_and_collect fetched no results for "
                    f"{COLLECT_TIMEOUT_S:.0f} s while {operator_id} waited to send "
                    "more; read the results iterator (or close it to cancel the job)"
                )
                raise RemoteTimeoutError(msg)
            backoff_ms = min(max(retry_after_ms, 2 * backoff_ms), COLLECT_MAX_BACKOFF_MS)
            # The back-off is the back-pressure: the task waits for the client here.
            self._stopping.wait(backoff_ms / 1000)


class CheckpointResponder:
    """Acknowledges and declines a task's checkpoints (its checkpoint writer thread)."""

    def __init__(self, connection: JobMasterConnection, tasks: TaskLookup) -> None:
        self._connection = connection
        self._tasks = tasks

    def acknowledge(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        task_state: TaskStateSnapshot,
        metrics: CheckpointMetrics,
    ) -> None:
        """A lost ack only lets the checkpoint expire; the next one covers the same
        records."""
        c = self._connection
        try:
            c.gateways.acknowledge_checkpoint(
                c.address,
                job_id=c.job_id,
                attempt_id=attempt_id,
                checkpoint_id=checkpoint_id,
                task_state=task_state,
                metrics=metrics,
                timeout_s=RPC_TIMEOUT_S,
            )
        except WeirError:
            if self._tasks.task(attempt_id) is None:
                # The task ended meanwhile, and its job may have too (a checkpoint
                # written while the job finished): nobody waits for this ack.
                logger.debug(
                    "acknowledging checkpoint %d of ended task %s failed",
                    checkpoint_id,
                    attempt_id,
                    exc_info=True,
                )
                return
            logger.warning(
                "acknowledging checkpoint %d of %s failed", checkpoint_id, attempt_id, exc_info=True
            )

    def decline(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, reason: str) -> None:
        c = self._connection
        try:
            c.gateways.decline_checkpoint(
                c.address,
                job_id=c.job_id,
                attempt_id=attempt_id,
                checkpoint_id=checkpoint_id,
                reason=reason,
                timeout_s=RPC_TIMEOUT_S,
            )
        except WeirError:
            # The checkpoint expires instead of being aborted at once; nobody waits for
            # it when the task has ended.
            running = self._tasks.task(attempt_id) is not None
            logger.log(
                logging.WARNING if running else logging.DEBUG,
                "declining checkpoint %d of %s failed",
                checkpoint_id,
                attempt_id,
                exc_info=True,
            )


class KvStateRegistrar:
    """Registers a task's queryable state with this TaskManager's state server and its
    JobMaster (task thread, in the operator's ``open``: one RPC per queryable state,
    none per record)."""

    def __init__(
        self,
        connection: JobMasterConnection,
        tdd: TaskDeploymentDescriptor,
        server: Callable[[], KvStateServer | None],
        registry: KvStateRegistry,
    ) -> None:
        self._connection = connection
        self._tdd = tdd
        self._server = server
        self._registry = registry

    def register(
        self,
        operator_id: str,
        name: str,
        backend: KeyedStateBackend,
        read: Callable[[], Any],
        put_mail: Callable[[Callable[[], None]], None],
    ) -> None:
        tdd = self._tdd
        server = self._server()
        if server is None:
            logger.warning(
                "state %r of %s is queryable but this cluster serves no queryable state "
                "(queryable-state.enable is false); it cannot be queried",
                name,
                tdd.task_name,
            )
            return
        registration = KvStateRegistration(
            job_id=tdd.job_id,
            attempt_id=tdd.execution_attempt_id,
            operator_id=operator_id,
            registration_name=name,
            subtask_index=tdd.subtask_index,
            key_groups=backend.key_group_range,
            num_key_groups=backend.max_parallelism,
            key_type=backend.key_hasher.key_type,
            kv_state_id=KvStateRegistry.new_kv_state_id(),
            server_address=server.address,
        )
        self._registry.register(KvStateEntry(registration, backend, read, put_mail))
        c = self._connection
        c.gateways.notify_kv_state_registered(c.address, registration, RPC_TIMEOUT_S)
        logger.info(
            "queryable state %r of %s registered at %s", name, tdd.task_name, server.address
        )
