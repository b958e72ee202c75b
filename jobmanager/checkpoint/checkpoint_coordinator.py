"""The JobMaster's CheckpointCoordinator: triggers checkpoints at the sources, collects the
tasks' acknowledgements, completes (``_metadata``, store, notify) or aborts them, and gives
the state to restore after a failure (Flink's CheckpointCoordinator).

Threading: every public method may be called from any thread (gRPC handlers for acks and
declines, the scheduler's thread for failures, the executor's thread for timers). State
changes happen under one lock; RPCs to tasks are made after it is released, so a slow
TaskExecutor never blocks acknowledgements. Storage I/O that orders completion (creating
``chk-N``, writing ``_metadata``) happens under the lock, which keeps the order
"``_metadata`` written, then registered, then tasks notified" without extra bookkeeping.
Deleting subsumed and aborted checkpoints and unreferenced shared files happens on the
``CheckpointsCleaner``'s thread, in order, never on the thread of an acknowledgement, a
decline or a trigger: a store that is slow or down must not hold up the decline that says
so. While more checkpoints await deletion than may run at once, periodic triggers wait
(Flink's bound on the backlog); each deletion that ends retries them.

Shared files of incremental checkpoints are reference-counted (``SharedStateRegistry``):
registered when a checkpoint completes, released when it is subsumed, deleted at zero;
files an aborted checkpoint uploaded that nothing refers to are deleted with it. The
counts are rebuilt from the retained checkpoints' metadata the first time they are
needed (a JobMaster that took over a job starts with none).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Protocol

from weir.core.checkpoint import (
    CheckpointingConfig,
    CheckpointingMode,
    CheckpointMetadata,
    CheckpointMetrics,
    CheckpointStatsSnapshot,
    CheckpointStorage,
    CheckpointStorageLocation,
    CheckpointType,
    OperatorState,
    TaskStateSnapshot,
    decode_metadata,
    encode_metadata,
)
from weir.core.checkpoint.savepoint_storage import savepoint_location
from weir.core.errors import (
    CheckpointError,
    CorruptCheckpointError,
    PossibleInconsistentStateError,
    WeirError,
)
from weir.core.highavailability import (
    CheckpointIdCounter,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
)
from weir.core.ids import ExecutionAttemptId, JobId, OperatorId
from weir.core.job_status import JobStatus
from weir.core.key_groups import default_max_parallelism
from weir.jobmanager.checkpoint.checkpoint_plan import CheckpointPlan
from weir.jobmanager.checkpoint.checkpoint_restorer import CheckpointRestorer
from weir.jobmanager.checkpoint.checkpoint_stats_tracker import CheckpointStatsTracker
from weir.jobmanager.checkpoint.checkpoints_cleaner import CheckpointsCleaner
from weir.jobmanager.checkpoint.completed_checkpoint import CompletedCheckpoint
from weir.jobmanager.checkpoint.pending_checkpoint import AckResult, PendingCheckpoint
from weir.jobmanager.checkpoint.savepoint_requests import SavepointRequest, SavepointRequests
from weir.jobmanager.checkpoint.scheduling import Clock, ScheduledExecutor, ScheduledTask
from weir.jobmanager.checkpoint.shared_state_registry import SharedStateRegistry

logger = logging.getLogger(__name__)

# The reasons a task declines a checkpoint that Flink does not count against
# execution.checkpointing.tolerable-failed-checkpoints
# (CheckpointFailureReason.isCountedAgainstFailureThreshold): a barrier of a newer
# checkpoint came first, or the checkpoint was aborted already. Counting them failed a
# job with no failure tolerated whenever a barrier overtook another on some input.
_UNCOUNTED_DECLINES = frozenset(
    {
        "CHECKPOINT_DECLINED_SUBSUMED",
        "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER",
        "CHECKPOINT_DECLINED_TASK_NOT_READY",
        "CHECKPOINT_DECLINED_TASK_CLOSING",
        "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM",
    }
)


@dataclass(frozen=True, slots=True)
class CheckpointOptions:
    """Sent with a trigger: how the tasks take this checkpoint (Flink's CheckpointOptions)."""

    checkpoint_type: CheckpointType
    mode: CheckpointingMode
    unaligned: bool
    snapshot_compression: bool
    target_location: str = ""
    """A savepoint's directory; empty for checkpoints."""
    drain: bool = False
    """Sources end event time (MAX_WATERMARK) before the barrier (stop --drain)."""


class CheckpointTriggerGateway(Protocol):
    """How the coordinator reaches tasks (implemented over the TaskExecutor gRPC service).

    Calls are made without the coordinator's lock held, possibly from several threads.
    A call that cannot reach the task raises a WeirError (RemoteError and subclasses).
    """

    def trigger_checkpoint(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        timestamp_ms: int,
        options: CheckpointOptions,
    ) -> None: ...

    def notify_checkpoint_complete(
        self, attempt_id: ExecutionAttemptId, checkpoint_id: int
    ) -> None: ...

    def notify_checkpoint_aborted(
        self, attempt_id: ExecutionAttemptId, checkpoint_id: int
    ) -> None: ...


CheckpointPlanProvider = Callable[[], CheckpointPlan | None]
"""The running tasks of the job now, or None when not every task is RUNNING (then no
checkpoint is triggered: Flink's NOT_ALL_REQUIRED_TASKS_RUNNING)."""

FailureListener = Callable[[CheckpointError], None]
"""Called (without the lock) when more consecutive checkpoints failed than tolerated; the
scheduler then fails the job over as for a task failure."""

CompletionListener = Callable[[int], None]
"""Called with the id of each checkpoint that completed, under the coordinator's lock,
after it is registered and before the tasks are notified; must be quick and not call
back into the coordinator (the JobMaster releases held-back collect batches)."""

_Effect = Callable[[], None]


class CheckpointCoordinator:
    def __init__(
        self,
        *,
        job_id: JobId,
        config: CheckpointingConfig,
        storage: CheckpointStorage,
        id_counter: CheckpointIdCounter,
        store: CompletedCheckpointStore,
        gateway: CheckpointTriggerGateway,
        plan_provider: CheckpointPlanProvider,
        clock: Clock,
        executor: ScheduledExecutor,
        on_failure: FailureListener,
        stats: CheckpointStatsTracker | None = None,
        on_completed: CompletionListener | None = None,
        confirm_leadership: Callable[[], bool] | None = None,
        io_executor: Executor | None = None,
    ) -> None:
        """``io_executor``: where deletions run, in order (default: a thread of the
        coordinator's own, ended by ``shutdown`` and ``suspend``)."""
        self.job_id = job_id
        self.config = config
        self._storage = storage
        self._counter = id_counter
        self._counter_passed = 0
        """An id the counter is known to be past (drawn or restored by this coordinator):
        restoring a checkpoint up to it needs no read of the counter, which under high
        availability lives in the HA store and may be unreachable just then."""
        self._store = store
        self._gateway = gateway
        self._plan_provider = plan_provider
        self._clock = clock
        self._executor = executor
        self._on_failure = on_failure
        self._on_completed = on_completed
        # Asked (without the lock, once per completed checkpoint) before the tasks are told
        # to commit: a leader deposed while it completed the checkpoint commits nothing.
        self._confirm_leadership = confirm_leadership
        self._confirmed: dict[int, bool] = {}
        self._confirm_lock = threading.Lock()
        self._stats = stats or CheckpointStatsTracker()
        self._lock = threading.RLock()
        self._pending: dict[int, PendingCheckpoint] = {}
        self._periodic = False
        self._periodic_task: ScheduledTask | None = None
        self._trigger_requested = False
        self._last_end_ms: int | None = None
        self._consecutive_failures = 0
        self._restored_external: set[int] = set()
        self._shut_down = False
        self._shared = SharedStateRegistry()
        self._shared_loaded = False
        self._savepoints = SavepointRequests(job_id)
        self._cleaner = CheckpointsCleaner(job_id, io_executor)
        self._restorer = CheckpointRestorer(job_id, storage, store)
        self._held_for_cleaning = False
        # The job's shared directories, once, here (as Flink's coordinator does), so that
        # no task has to create them.
        storage.initialize_base_locations()

    # -- inspection ----------------------------------------------------------------------
    @property
    def pending_checkpoint_ids(self) -> list[int]:
        with self._lock:
            return sorted(self._pending)

    @property
    def is_periodic_checkpointing_started(self) -> bool:
        with self._lock:
            return self._periodic

    def statistics(self) -> CheckpointStatsSnapshot:
        return self._stats.snapshot()

    # -- periodic triggering -------------------------------------------------------------
    def start_periodic_scheduler(self) -> None:
        """Start triggering every ``interval``, the first one interval from now. Called when
        the job switches to RUNNING; no effect when checkpointing is off."""
        with self._lock:
            if self._shut_down or self._periodic or not self.config.enabled:
                return
            self._periodic = True
            self._trigger_requested = False
            self._periodic_task = self._executor.schedule(
                self.config.interval_ms, self._on_periodic_timer
            )

    def stop_periodic_scheduler(self) -> None:
        """Stop periodic triggers (the job left RUNNING); pending checkpoints are untouched."""
        with self._lock:
            self._periodic = False
            self._trigger_requested = False
            if self._periodic_task is not None:
                self._periodic_task.cancel()
                self._periodic_task = None

    def _on_periodic_timer(self) -> None:
        with self._lock:
            self._periodic_task = None
            if not self._periodic or self._shut_down:
                return
            self._trigger_requested = True
        self._try_trigger_requested()

    def _try_trigger_requested(self) -> None:
        effects: list[_Effect] = []
        with self._lock:
            if not (self._trigger_requested and self._periodic) or self._shut_down:
                return
            if len(self._pending) >= self.config.max_concurrent:
                return  # retried when a pending checkpoint completes or aborts
            if self._cleaner.number_of_checkpoints_to_clean > self.config.max_concurrent:
                # The store deletes slower than checkpoints end: wait rather than pile up
                # more to delete (Flink's CheckpointRequestDecider); retried by the cleaner.
                self._held_for_cleaning = True
                return
            now = self._clock()
            earliest = (
                now if self._last_end_ms is None else self._last_end_ms + self.config.min_pause_ms
            )
            if now < earliest:
                if self._periodic_task is None:
                    self._periodic_task = self._executor.schedule(
                        earliest - now, self._on_periodic_timer
                    )
                return
            self._trigger_requested = False
            if self._periodic_task is not None:
                self._periodic_task.cancel()
            self._periodic_task = self._executor.schedule(
                self.config.interval_ms, self._on_periodic_timer
            )
            effects = self._trigger_locked(now, CheckpointType.CHECKPOINT)
        self._run(effects)

    # -- triggering ----------------------------------------------------------------------
    def trigger_checkpoint(
        self, checkpoint_type: CheckpointType = CheckpointType.CHECKPOINT
    ) -> int | None:
        """Trigger a checkpoint now, regardless of min pause and max concurrent (as Flink
        does for savepoints and forced checkpoints). Returns its id, or None when not every
        task is running."""
        with self._lock:
            if self._shut_down:
                msg = f"job {self.job_id}: the checkpoint coordinator is shut down"
                raise CheckpointError(msg)
            ids_before = set(self._pending)
            effects = self._trigger_locked(self._clock(), checkpoint_type)
            new_ids = set(self._pending) - ids_before
        self._run(effects)
        return new_ids.pop() if new_ids else None

    def trigger_savepoint(
        self, directory: str, *, terminate: bool = False, drain: bool = False
    ) -> Future[str]:
        """Trigger a savepoint into ``directory`` (a new, empty directory URL) now. The
        future completes with the directory once ``_metadata`` is written there, or fails
        with a CheckpointError saying why. ``terminate``: the job stops after it (stop
        with savepoint): periodic checkpoints stop first, so none commits output past the
        savepoint; they start again if the savepoint fails. ``drain`` (with ``terminate``):
        the sources emit MAX_WATERMARK ahead of the barrier.

        Raises CheckpointError at once when it cannot be triggered (not every task is
        running, or the coordinator is shut down)."""
        result: Future[str] = Future()
        request = SavepointRequest(directory, terminate, drain and terminate, result)
        with self._lock:
            if self._shut_down:
                msg = f"job {self.job_id} is ending: its checkpoint coordinator is shut down"
                raise CheckpointError(msg)
            plan = self._plan_provider()
            if plan is None or not plan.tasks_to_trigger:
                msg = (
                    f"job {self.job_id}: not every task is running (tasks are being deployed, "
                    "restarted or are finishing); retry once they are all RUNNING"
                )
                raise CheckpointError(msg)
            effects: list[_Effect] = []
            if terminate:
                self.stop_periodic_scheduler()
                for pending in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
                    if pending.checkpoint_id not in self._savepoints:
                        effects += self._abort_locked(
                            pending, "a stop with savepoint is in progress", counted=False
                        )
            error: CheckpointError | None = None
            try:
                effects += self._trigger_locked(
                    self._clock(), CheckpointType.SAVEPOINT, plan=plan, savepoint=request
                )
            except CheckpointError as exc:
                error = exc
                if terminate:
                    self.start_periodic_scheduler()  # the job goes on as before
        self._run(effects)
        if error is not None:
            raise error
        return result

    def _trigger_locked(
        self,
        now: int,
        checkpoint_type: CheckpointType,
        *,
        plan: CheckpointPlan | None = None,
        savepoint: SavepointRequest | None = None,
    ) -> list[_Effect]:
        plan = plan or self._plan_provider()
        if plan is None or not plan.tasks_to_trigger:
            logger.info(
                "job %s: not triggering a checkpoint: not every task is running", self.job_id
            )
            return []
        try:
            checkpoint_id = self._counter.get_and_increment()
            self._counter_passed = max(self._counter_passed, checkpoint_id)
        except WeirError as exc:  # the counter lives in ZooKeeper under high availability
            if savepoint is not None:
                msg = f"no checkpoint id could be drawn for the savepoint: {exc}"
                raise CheckpointError(msg) from exc
            logger.warning("job %s: not triggering a checkpoint: %s", self.job_id, exc)
            return []
        try:
            location: CheckpointStorageLocation
            if savepoint is not None:
                location = savepoint_location(savepoint.directory, checkpoint_id)
            else:
                location = self._storage.init_checkpoint(checkpoint_id)
        except (OSError, CheckpointError) as exc:
            if savepoint is not None:
                msg = f"savepoint {checkpoint_id}: cannot create {savepoint.directory}: {exc}"
                raise CheckpointError(msg) from exc
            logger.warning(
                "job %s: checkpoint %d: cannot create its storage location",
                self.job_id,
                checkpoint_id,
                exc_info=True,
            )
            self._stats.report_pending(checkpoint_id, now, checkpoint_type, len(plan.tasks))
            self._stats.report_failed(checkpoint_id, now, f"storage: {exc}")
            self._last_end_ms = now
            return self._count_failure(checkpoint_id, f"its storage location failed: {exc}")
        pending = PendingCheckpoint(checkpoint_id, now, plan, location, checkpoint_type)
        self._pending[checkpoint_id] = pending
        if savepoint is not None:
            self._savepoints.add(checkpoint_id, savepoint)
        pending.timeout_task = self._executor.schedule(
            self.config.timeout_ms, lambda: self._on_timeout(checkpoint_id)
        )
        self._stats.report_pending(checkpoint_id, now, checkpoint_type, len(plan.tasks))
        logger.info(
            "job %s: triggering %s %d",
            self.job_id,
            "savepoint" if savepoint else "checkpoint",
            checkpoint_id,
        )
        options = CheckpointOptions(
            checkpoint_type,
            self.config.mode,
            self.config.unaligned and savepoint is None,  # savepoints are always aligned
            self.config.snapshot_compression,
            savepoint.directory if savepoint else "",
            savepoint.drain if savepoint else False,
        )
        return [
            self._trigger_effect(task.attempt_id, checkpoint_id, now, options)
            for task in plan.tasks_to_trigger
        ]

    def _trigger_effect(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        now: int,
        options: CheckpointOptions,
    ) -> _Effect:
        def effect() -> None:
            try:
                self._gateway.trigger_checkpoint(attempt_id, checkpoint_id, now, options)
            except WeirError as exc:
                self.receive_decline(attempt_id, checkpoint_id, f"triggering it failed: {exc}")

        return effect

    # -- acknowledgements and declines ---------------------------------------------------
    def receive_acknowledge(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        snapshot: TaskStateSnapshot,
        metrics: CheckpointMetrics | None = None,
    ) -> bool:
        """A task took its part of the checkpoint. Returns whether the ack was used; acks
        for unknown, aborted or completed checkpoints and duplicates are logged and
        ignored (state of an aborted checkpoint is deleted)."""
        effects: list[_Effect] = []
        used = False
        with self._lock:
            pending = self._pending.get(checkpoint_id)
            if pending is None or self._shut_down:
                effects = self._late_message_locked(attempt_id, checkpoint_id, snapshot)
            else:
                now = self._clock()
                result = pending.acknowledge(
                    attempt_id, snapshot, metrics or CheckpointMetrics(), now
                )
                if result is not AckResult.SUCCESS:
                    logger.warning(
                        "job %s: checkpoint %d: ignoring acknowledgement from %s (%s)",
                        self.job_id,
                        checkpoint_id,
                        attempt_id,
                        result.value,
                    )
                else:
                    used = True
                    self._stats.report_acknowledged(checkpoint_id, now, pending.metrics.values())
                    if pending.is_fully_acknowledged:
                        effects = self._complete_locked(pending)
        self._run(effects)
        if used:
            self._try_trigger_requested()
        return used

    def receive_decline(
        self, attempt_id: ExecutionAttemptId, checkpoint_id: int, reason: str
    ) -> None:
        """A task could not take the checkpoint: abort it. It counts as a failure unless
        the task declined because a newer checkpoint subsumed it or it was aborted
        already (``_UNCOUNTED_DECLINES``)."""
        effects: list[_Effect] = []
        with self._lock:
            pending = self._pending.get(checkpoint_id)
            if pending is None:
                logger.info(
                    "job %s: checkpoint %d: ignoring decline from %s: not in progress",
                    self.job_id,
                    checkpoint_id,
                    attempt_id,
                )
                return
            if attempt_id not in {task.attempt_id for task in pending.plan.tasks}:
                logger.warning(
                    "job %s: checkpoint %d: ignoring decline from %s: not one of its tasks",
                    self.job_id,
                    checkpoint_id,
                    attempt_id,
                )
                return
            effects = self._abort_locked(
                pending,
                f"declined by task {attempt_id}: {reason}",
                counted=reason not in _UNCOUNTED_DECLINES,
            )
        self._run(effects)
        self._try_trigger_requested()

    def _on_timeout(self, checkpoint_id: int) -> None:
        effects: list[_Effect] = []
        with self._lock:
            pending = self._pending.get(checkpoint_id)
            if pending is None or pending.disposed:
                return
            pending.timeout_task = None
            effects = self._abort_locked(
                pending,
                f"expired after {self.config.timeout_ms} ms with {pending.num_acknowledged} of "
                f"{pending.num_tasks} acknowledgements (execution.checkpointing.timeout)",
                counted=True,
            )
        self._run(effects)
        self._try_trigger_requested()

    def task_finished(self, attempt_id: ExecutionAttemptId) -> None:
        """A task exited after its final checkpoint (FLIP-147): the checkpoints still
        waiting for its acknowledgement never get it (it was triggered, or its barrier
        arrived, after it ended). They are aborted, not counted as failures; the next
        checkpoint records the task as finished."""
        effects: list[_Effect] = []
        with self._lock:
            for pending in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
                if pending.waits_for(attempt_id):
                    effects += self._abort_locked(
                        pending, f"task {attempt_id} finished before acknowledging it", False
                    )
        self._run(effects)
        self._try_trigger_requested()

    def abort_pending(self, reason: str) -> None:
        """Abort every checkpoint in progress: a task failed or the job is restarting.
        Not counted against tolerable failures: the failover handles the cause."""
        effects: list[_Effect] = []
        with self._lock:
            for pending in sorted(self._pending.values(), key=lambda p: p.checkpoint_id):
                effects += self._abort_locked(pending, reason, counted=False)
        self._run(effects)

    def _late_message_locked(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        snapshot: TaskStateSnapshot | None = None,
    ) -> list[_Effect]:
        retained = {p.checkpoint_id for p in self._store.get_all()}
        # Never triggered: beyond every id this coordinator drew (no read of the counter,
        # which may live in an HA store that is unreachable just now).
        if checkpoint_id in retained or checkpoint_id > self._counter_passed:
            logger.info(
                "job %s: ignoring acknowledgement of checkpoint %d from %s: %s",
                self.job_id,
                checkpoint_id,
                attempt_id,
                "already completed" if checkpoint_id in retained else "never triggered",
            )
            return []
        # Aborted or subsumed: the task may have written files after the directory was
        # deleted, so delete it again (ids never repeat, so nothing live is there).
        logger.info(
            "job %s: discarding late acknowledgement of checkpoint %d from %s",
            self.job_id,
            checkpoint_id,
            attempt_id,
        )
        directory = checkpoint_id not in self._restored_external
        uploaded: list[str] = []
        if snapshot is not None:
            # Shared files this late task uploaded for nothing (not those it referred to).
            self._load_shared_locked()
            uploaded = self._shared.unreferenced(
                path for state in snapshot.subtask_states.values() for path in state.shared_paths()
            )
        if not (directory or uploaded):
            return []
        return [self._discard_effect(checkpoint_id, directory=directory, shared=uploaded)]

    # -- shared state --------------------------------------------------------------------
    def _load_shared_locked(self) -> None:
        """Count the shared files of the retained checkpoints, once."""
        if self._shared_loaded:
            return
        self._shared_loaded = True
        for pointer in self._store.get_all():
            try:
                metadata = decode_metadata(
                    self._storage.read_metadata(pointer.external_pointer),
                    source=pointer.external_pointer,
                )
            except (CorruptCheckpointError, OSError):
                logger.warning(
                    "job %s: cannot read checkpoint %d to count its shared files",
                    self.job_id,
                    pointer.checkpoint_id,
                    exc_info=True,
                )
                continue
            if pointer.checkpoint_id in self._restored_external:
                self._shared.pin(metadata.shared_paths())
            self._shared.register(pointer.checkpoint_id, metadata.shared_paths())

    def _discard_effect(
        self, checkpoint_id: int, *, directory: bool = True, shared: list[str] | None = None
    ) -> _Effect:
        """Hand the cleaner the deletion of checkpoint ``checkpoint_id``'s directory (when
        ``directory``) and of the shared files ``shared``, which nothing refers to any more.
        Queued in the order the effects run; it runs on the cleaner's thread."""
        paths = list(shared or ())

        def discard() -> None:
            if directory:
                self._storage.discard_checkpoint(checkpoint_id)
            if paths:
                logger.info(
                    "job %s: checkpoint %d: deleting %d shared files nothing refers to",
                    self.job_id,
                    checkpoint_id,
                    len(paths),
                )
                self._storage.discard_shared(paths)

        return lambda: self._cleaner.clean(checkpoint_id, discard, self._after_cleaning)

    def _after_cleaning(self) -> None:
        """A deletion ended (on the cleaner's thread): retry a periodic trigger it held."""
        with self._lock:
            held, self._held_for_cleaning = self._held_for_cleaning, False
        if held:
            self._try_trigger_requested()

    @property
    def shared_state_registry(self) -> SharedStateRegistry:
        return self._shared

    # -- completion and abort ------------------------------------------------------------
    def _complete_locked(self, pending: PendingCheckpoint) -> list[_Effect]:
        now = self._clock()
        checkpoint_id = pending.checkpoint_id
        operator_states = self._operator_states(pending)
        metadata = CheckpointMetadata(
            job_id=self.job_id,
            checkpoint_id=checkpoint_id,
            trigger_timestamp_ms=pending.trigger_timestamp_ms,
            completion_timestamp_ms=now,
            checkpoint_type=pending.checkpoint_type,
            operator_states=operator_states,
        )
        savepoint = self._savepoints.get(checkpoint_id)
        if savepoint is not None:
            return self._complete_savepoint_locked(pending, metadata, savepoint)
        try:
            self._load_shared_locked()
            pointer = self._storage.write_metadata(checkpoint_id, encode_metadata(metadata))
            self._shared.register(checkpoint_id, metadata.shared_paths())
            subsumed = self._store.add_checkpoint(
                CompletedCheckpointPointer(self.job_id, checkpoint_id, pointer, now)
            )
        except PossibleInconsistentStateError as exc:
            # Registered in ZooKeeper, maybe: the next leader may restore it, so its files
            # stay (Flink keeps them too); a later checkpoint subsumes it as usual. Not
            # counted, as the aborts of a suspension are not: a connection blip is no
            # reason for a failover.
            logger.warning(
                "job %s: checkpoint %d may or may not be registered (%s); its files are kept",
                self.job_id,
                checkpoint_id,
                exc,
            )
            return self._abort_locked(
                pending, f"registering it had no answer: {exc}", counted=False, discard=False
            )
        except (OSError, WeirError) as exc:
            logger.warning(
                "job %s: checkpoint %d: finalizing failed",
                self.job_id,
                checkpoint_id,
                exc_info=True,
            )
            return self._abort_locked(pending, f"finalizing it failed: {exc}", counted=True)
        del self._pending[checkpoint_id]
        pending.dispose()
        discards = [
            self._discard_effect(
                old.checkpoint_id, shared=self._shared.unregister(old.checkpoint_id)
            )
            for old in subsumed
            if old.checkpoint_id not in self._restored_external
        ]
        self._last_end_ms = now
        self._consecutive_failures = 0
        self._stats.report_completed(
            checkpoint_id, now, pending.metrics.values(), metadata.state_size, pointer
        )
        logger.info(
            "job %s: checkpoint %d completed in %d ms (%d bytes of state)",
            self.job_id,
            checkpoint_id,
            now - pending.trigger_timestamp_ms,
            metadata.state_size,
        )
        if self._on_completed is not None:
            self._on_completed(checkpoint_id)
        effects = [
            self._notify_effect(task.attempt_id, checkpoint_id, complete=True)
            for task in pending.plan.tasks
        ]
        effects += discards
        for older in sorted(
            p for p in self._pending if p < checkpoint_id and p not in self._savepoints
        ):
            effects += self._abort_locked(
                self._pending[older], f"subsumed by checkpoint {checkpoint_id}", counted=False
            )
        return effects

    def _complete_savepoint_locked(
        self, pending: PendingCheckpoint, metadata: CheckpointMetadata, request: SavepointRequest
    ) -> list[_Effect]:
        checkpoint_id = pending.checkpoint_id
        now = metadata.completion_timestamp_ms
        try:
            pointer = self._savepoints.write_metadata(checkpoint_id, metadata)
        except (OSError, WeirError) as exc:
            logger.warning(
                "job %s: savepoint %d: writing its _metadata failed",
                self.job_id,
                checkpoint_id,
                exc_info=True,
            )
            return self._abort_locked(pending, f"writing its _metadata failed: {exc}", False)
        del self._pending[checkpoint_id]
        pending.dispose()
        self._last_end_ms = now
        self._stats.report_completed(
            checkpoint_id, now, pending.metrics.values(), metadata.state_size, pointer
        )
        logger.info(
            "job %s: savepoint %d completed in %d ms at %s (%d bytes of state)",
            self.job_id,
            checkpoint_id,
            now - pending.trigger_timestamp_ms,
            pointer,
            metadata.state_size,
        )
        effects: list[_Effect] = []
        if request.terminate:
            # The job ends at this savepoint: what it covers is committed, as by a checkpoint.
            if self._on_completed is not None:
                self._on_completed(checkpoint_id)
            effects = [
                self._notify_effect(task.attempt_id, checkpoint_id, complete=True)
                for task in pending.plan.tasks
            ]
        return [*effects, self._savepoints.completed_effect(request, pointer)]

    @staticmethod
    def _operator_states(pending: PendingCheckpoint) -> dict[OperatorId, OperatorState]:
        """The acknowledged states, and the subtasks that had finished, per operator."""
        plan = pending.plan
        acked = pending.operator_states()
        states: dict[OperatorId, OperatorState] = {}
        for operator_id in acked.keys() | plan.finished.keys():
            subtasks = acked.get(operator_id, {})
            finished = plan.finished.get(operator_id)
            parallelism = finished.parallelism if finished else next(iter(subtasks.values()))[0]
            states[operator_id] = OperatorState(
                operator_id=operator_id,
                parallelism=parallelism,
                max_parallelism=plan.max_parallelism.get(
                    operator_id, default_max_parallelism(parallelism)
                ),
                subtask_states={index: state for index, (_, state) in subtasks.items()},
                finished_subtasks=finished.finished_subtasks if finished else frozenset(),
                uid=plan.uids.get(operator_id, ""),
            )
        return states

    def _abort_locked(
        self, pending: PendingCheckpoint, reason: str, counted: bool, *, discard: bool = True
    ) -> list[_Effect]:
        """``discard``: delete what the checkpoint wrote (not when it may be registered)."""
        checkpoint_id = pending.checkpoint_id
        now = self._clock()
        self._pending.pop(checkpoint_id, None)
        pending.dispose()
        savepoint = self._savepoints.pop(checkpoint_id)
        uploaded = (
            self._shared.unreferenced(
                path
                for subtasks in pending.operator_states().values()
                for _, state in subtasks.values()
                for path in state.shared_paths()
            )
            if discard
            else []
        )
        self._stats.report_failed(checkpoint_id, now, reason)
        self._last_end_ms = now
        logger.info("job %s: checkpoint %d aborted: %s", self.job_id, checkpoint_id, reason)
        effects: list[_Effect] = []
        directory = savepoint is None and discard
        if directory or uploaded:
            effects.append(
                self._discard_effect(checkpoint_id, directory=directory, shared=uploaded)
            )
        if not self._shut_down:
            effects += [
                self._notify_effect(task.attempt_id, checkpoint_id, complete=False)
                for task in pending.plan.tasks
            ]
        if savepoint is not None:
            # Not counted against tolerable failures: the caller is told instead.
            effects.append(self._savepoints.failed_effect(checkpoint_id, savepoint, reason))
            if savepoint.terminate and not self._shut_down:
                self.start_periodic_scheduler()
        elif counted:
            effects += self._count_failure(checkpoint_id, reason)
        return effects

    def _count_failure(self, checkpoint_id: int, reason: str) -> list[_Effect]:
        self._consecutive_failures += 1
        if self._consecutive_failures <= self.config.tolerable_failures:
            return []
        failures = self._consecutive_failures
        self._consecutive_failures = 0
        error = CheckpointError(
            f"job {self.job_id}: {failures} consecutive checkpoints failed, more than "
            "execution.checkpointing.tolerable-failed-checkpoints "
            f"({self.config.tolerable_failures}); "
            f"the last, checkpoint {checkpoint_id}: {reason}"
        )
        return [lambda: self._on_failure(error)]

    def _notify_effect(
        self, attempt_id: ExecutionAttemptId, checkpoint_id: int, complete: bool
    ) -> _Effect:
        def effect() -> None:
            if complete and not self._leadership_confirmed(checkpoint_id):
                return
            try:
                if complete:
                    self._gateway.notify_checkpoint_complete(attempt_id, checkpoint_id)
                else:
                    self._gateway.notify_checkpoint_aborted(attempt_id, checkpoint_id)
            except WeirError as exc:
                # A task that cannot be told has failed or will: its failover restores
                # from the latest completed checkpoint either way. One line, no traceback:
                # this is expected while a TaskManager is being lost.
                logger.warning(
                    "job %s: could not notify %s of checkpoint %d: %s",
                    self.job_id,
                    attempt_id,
                    checkpoint_id,
                    exc,
                )

        return effect

    def _leadership_confirmed(self, checkpoint_id: int) -> bool:
        """Whether this JobMaster still leads, asked once per checkpoint (a ZooKeeper round
        trip with high availability) by the first of its notifications."""
        if self._confirm_leadership is None:
            return True
        with self._confirm_lock:
            known = self._confirmed.get(checkpoint_id)
            if known is None:
                known = self._confirm_leadership()
                self._confirmed = {checkpoint_id: known}  # only the latest is asked again
                if not known:
                    logger.warning(
                        "job %s: checkpoint %d: this JobMaster no longer leads; its tasks "
                        "are not told to commit (the next leader restores and commits it)",
                        self.job_id,
                        checkpoint_id,
                    )
            return known

    @staticmethod
    def _run(effects: list[_Effect]) -> None:
        for effect in effects:
            effect()

    # -- restore -------------------------------------------------------------------------
    def restore_latest(self, verify_state: bool = True) -> CompletedCheckpoint | None:
        """The latest retained checkpoint that can be read, for redeploying the job; None
        when no checkpoint completed yet. A missing or corrupt file makes it fall back to
        the previous retained checkpoint (logged at WARNING); CheckpointError when none
        is usable. A storage that does not answer raises CheckpointStorageUnavailableError
        at once: restoring an older checkpoint then would repeat what sinks committed
        after it, so the caller tries again later instead. ``verify_state`` reads every
        state file and checks its checksum (otherwise only that the files exist). Call
        after ``abort_pending``. LeaderLostError when the HA store cannot say now which
        checkpoints it holds."""
        latest = self._restorer.latest(verify_state)
        if latest is None:
            return None
        metadata = latest.metadata
        self._bump_counter(metadata.checkpoint_id)
        with self._lock:
            self._load_shared_locked()
        self._stats.report_restored(
            metadata.checkpoint_id,
            self._clock(),
            latest.external_pointer,
            metadata.checkpoint_type,
        )
        logger.info("job %s: restoring from checkpoint %d", self.job_id, metadata.checkpoint_id)
        return latest

    def restore_from(self, pointer: str, verify_state: bool = True) -> CompletedCheckpoint:
        """Restore from a retained checkpoint or savepoint (``weir run -s PATH``): a
        ``chk-N`` directory or its ``_metadata``. It is registered as the latest completed
        checkpoint, so a failure before the next one restores it again, and it is never
        deleted by this job."""
        metadata = self._restorer.load(pointer, verify_state)
        effects: list[_Effect] = []
        with self._lock:
            self._bump_counter(metadata.checkpoint_id)
            self._restored_external.add(metadata.checkpoint_id)
            self._load_shared_locked()
            # Its shared files belong to the job that wrote it: never deleted here.
            self._shared.pin(metadata.shared_paths())
            self._shared.register(metadata.checkpoint_id, metadata.shared_paths())
            subsumed = self._store.add_checkpoint(
                CompletedCheckpointPointer(
                    self.job_id, metadata.checkpoint_id, pointer, metadata.completion_timestamp_ms
                )
            )
            effects = [
                self._discard_effect(
                    old.checkpoint_id, shared=self._shared.unregister(old.checkpoint_id)
                )
                for old in subsumed
                if old.checkpoint_id not in self._restored_external
            ]
            self._stats.report_restored(
                metadata.checkpoint_id, self._clock(), pointer, metadata.checkpoint_type
            )
        self._run(effects)
        logger.info(
            "job %s: restoring from checkpoint %d at %s",
            self.job_id,
            metadata.checkpoint_id,
            pointer,
        )
        return CompletedCheckpoint(metadata, pointer)

    def _bump_counter(self, restored_id: int) -> None:
        # Ids never repeat: after restoring checkpoint n the next one is at least n + 1.
        # A restart restores a checkpoint this coordinator drew (or restored) itself: the
        # counter is past it already, and the HA store is not asked (a restart while its
        # server is unreachable must not fail the job for a read it does not need).
        if restored_id <= self._counter_passed:
            return
        if self._counter.get() <= restored_id:
            self._counter.set_count(restored_id + 1)
        self._counter_passed = restored_id

    # -- leadership ----------------------------------------------------------------------
    def suspend(self) -> None:
        """This JobMaster lost its leadership: stop for good without writing anything.
        Checkpoints in progress are dropped without touching storage or tasks (the next
        leader's ids come after them and its coordinator owns the files), and a later
        ``shutdown`` keeps every retained checkpoint: they are the next leader's."""
        with self._lock:
            if self._shut_down:
                return
            self.stop_periodic_scheduler()
            self._shut_down = True
            for pending in self._pending.values():
                pending.dispose()
            dropped = sorted(self._pending)
            self._pending.clear()
        # Deletions asked for while it led still run (what they delete is no longer
        # referred to); none is asked for any more.
        self._cleaner.close(wait=False)
        logger.info(
            "job %s: checkpoint coordinator suspended (leadership lost); dropped checkpoints %s",
            self.job_id,
            dropped or "none",
        )

    def pause(self, paused: bool) -> None:
        """While the leadership is in doubt (ZooKeeper SUSPENDED), trigger nothing and drop
        what is in progress (uncounted: no failover for a connection blip); resume after."""
        if paused:
            self.stop_periodic_scheduler()
            self.abort_pending("the ZooKeeper connection is suspended")
        else:
            self.start_periodic_scheduler()

    # -- shutdown ------------------------------------------------------------------------
    def shutdown(self, job_status: JobStatus) -> None:
        """The job reached ``job_status``: stop triggering, abort what is in progress, and
        keep or delete the retained checkpoints as the retention setting says.

        Deleting is irrevocable and the files may be another leader's: with leader
        election, leadership is confirmed first (a ZooKeeper round trip, before the lock);
        a JobMaster that no longer leads keeps every file, as ``suspend`` does.

        Waits for the deletions queued before (the job's directory is then deleted or
        swept after them, in order): on the caller's thread, which must not be one that
        acknowledgements wait for."""
        leading = self._confirm_leadership is None or self._confirm_leadership()
        effects: list[_Effect] = []
        with self._lock:
            if self._shut_down:
                return
            self.stop_periodic_scheduler()
            self._shut_down = True
            if not leading:
                for pending in self._pending.values():
                    pending.dispose()
                self._pending.clear()
                logger.warning(
                    "job %s: keeping its checkpoints: this JobMaster no longer leads, and the "
                    "job it saw %s was taken over by the new leader",
                    self.job_id,
                    job_status.name,
                )
                not_leading = True
            else:
                not_leading = False
                for pending in list(self._pending.values()):
                    effects += self._abort_locked(
                        pending, f"the job is {job_status.name}", counted=False
                    )
        if not_leading:
            self._cleaner.close(wait=False)
            return
        # The aborted checkpoints' deletions (no task is told: the job is over) and the
        # failure of a savepoint in progress.
        self._run(effects)
        self._cleaner.close(wait=True)
        retain = self.config.retention.retains_on(job_status)
        logger.info(
            "job %s: %s its checkpoints (job %s, %s)",
            self.job_id,
            "keeping" if retain else "deleting",
            job_status.name,
            self.config.retention.name,
        )
        self._storage.discard_job(retain=retain)
        # The job's entries in the HA store go with a globally terminal end (a retained
        # checkpoint is resumed by its path); a fenced write, refused to a deposed leader.
        try:
            self._store.shutdown(job_status)
            self._counter.shutdown(job_status)
        except WeirError as exc:
            logger.warning("job %s: its checkpoint pointers stay stored: %s", self.job_id, exc)
