"""Schedules a job (Flink's DefaultScheduler): deployment to TaskExecutors, the job status
that follows from its tasks' states, and failover: a failed task makes the restart strategy
decide between failing the job and redeploying every task from the latest completed
checkpoint (RUNNING -> RESTARTING -> RUNNING), unless no restart can cure the failure (a
non-recoverable error: the job fails at once). Each failover goes into the job's exception
history.

The scheduler is composed of parts built with what they need, each in a module of its own:

* ``ExecutionSlotAllocator``: the job's slots, asked for at the ResourceManager and kept
  across restarts, and the TaskManagers known to be lost or unreachable;
* ``ExecutionFailureHandler``: the failure cause, the restart strategy and the exception
  history: whether a failure restarts the job;
* ``TaskCanceller``: CancelTask to an attempt's tasks, and the watchdog of a cancelled job;
* ``CheckpointCoordinatorDeActivator``: what the checkpoint coordinator hears of the tasks.

Threading: one re-entrant lock, the scheduler's, guards its fields and its parts'. Calls
to TaskExecutors, the ResourceManager and the checkpoint coordinator are made outside it.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping

from weir.core.checkpoint import (
    CheckpointingConfig,
    OperatorState,
)
from weir.core.deployment import ExecutionState
from weir.core.errors import (
    CheckpointStorageUnavailableError,
    LeaderLostError,
    RemoteTimeoutError,
    ServiceUnavailableError,
    WeirError,
)
from weir.core.exception_history import ExceptionHistoryEntry
from weir.core.ids import ExecutionAttemptId, OperatorId
from weir.core.job_info import IOMetricsInfo, JobDetailsInfo
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.core.throwable_classifier import ThrowableType
from weir.jobmanager.checkpoint import CheckpointCoordinator, CheckpointPlan, plan_checkpoint
from weir.jobmanager.checkpoint.restore_plan import (
    NOTHING_RESTORED,
    initial_restore_plan,
    restore_plan,
)
from weir.jobmanager.checkpoint_coordinator_deactivator import CheckpointCoordinatorDeActivator
from weir.jobmanager.execution_failure_handler import ExecutionFailureHandler
from weir.jobmanager.execution_graph import ExecutionGraph, ExecutionVertex, SlotInfo
from weir.jobmanager.execution_slot_allocator import ExecutionSlotAllocator
from weir.jobmanager.gateways import (
    TASK_RPC_TIMEOUT_S,
    ResourceManagerGateway,
    TaskExecutorGateways,
)
from weir.jobmanager.task_canceller import (
    CancelTarget,
    TaskCanceller,
    cancel_targets,
    end_undeployed,
)

logger = logging.getLogger(__name__)


# A restart does not wait longer than this for the failed attempt's tasks to confirm their
# cancellation: the next attempt goes to other slots, and the old slots stay RELEASING on
# their TaskExecutors until those tasks end (availability first, as after a TaskManager
# loss).
CANCEL_CONFIRM_TIMEOUT_S = 15.0
# While its leadership is unconfirmed (ZooKeeper unreachable or the session in doubt) a
# JobMaster asks again this often before deploying; a revocation ends the wait sooner.
_LEADERSHIP_POLL_S = 0.2
# A restart whose checkpoint cannot be restored because the HA store does not answer tries
# again this often: each try reads the checkpoint's files, and the store's server returns in
# seconds or the leadership ends at its renew deadline (seconds too).
_RESTORE_RETRY_S = 1.0


class DefaultScheduler:
    def __init__(
        self,
        graph: ExecutionGraph,
        config: dict[str, str],
        jobmaster_address: Callable[[], str],
        resource_manager_address: Callable[[], str | None],
        on_status: Callable[[JobStatus], None],
        *,
        on_restart: Callable[[int], None] | None = None,
        security: SecurityConfig,
        confirm_leadership: Callable[[], bool] | None = None,
        leadership_revoked: Callable[[], bool] = lambda: False,
        fencing_token: Callable[[], str] = lambda: "",
    ) -> None:
        """``on_restart(attempt_number)`` is called, under the scheduler's lock, when a
        restart has ended the failed attempt's tasks and is about to deploy attempt
        ``attempt_number`` (collect buffers drop what they held back for the old one).

        ``confirm_leadership()`` asks the source of truth (ZooKeeper) whether this
        JobMaster still leads; ``leadership_revoked()`` says whether it learned that it
        does not. Both are asked, never under this scheduler's lock, before each attempt
        is deployed (restored tasks write to the job's sinks) and before the job ends for
        good: a JobMaster that may have been deposed (paused past its ZooKeeper session)
        deploys nothing, and its job does not end FAILED, CANCELED or FINISHED here but
        SUSPENDED (Flink's status for a job whose JobMaster lost its leadership): the job
        is the next leader's, and nothing that follows a job's end (deleting its
        checkpoints, dropping its graph, telling the client) happens."""
        self.graph = graph
        self._jobmaster_address = jobmaster_address
        self._on_status = on_status
        self._on_restart = on_restart
        self._confirm_leadership = confirm_leadership
        self._leadership_revoked = leadership_revoked
        # A thread waits for the verdict on leadership before the job ends (_conclude).
        self._concluding = False
        self._lock = threading.RLock()
        self.status = JobStatus.CREATED
        self.start_time_ms = int(time.time() * 1000)
        self.end_time_ms = 0
        self._thread: threading.Thread | None = None
        self._terminated = threading.Event()
        self._changed = threading.Condition(self._lock)
        # The job's failure cause, restart strategy and exception history.
        self._failures = ExecutionFailureHandler(self.job_id, config)
        # The job's slots, kept across restarts, and the TaskManagers known to be lost.
        self._slot_allocator = ExecutionSlotAllocator(
            self.job_id,
            config,
            lock=self._lock,
            job_status=lambda: self.status,
            resource_manager=ResourceManagerGateway(security, fencing_token),
            resource_manager_address=resource_manager_address,
            jobmaster_address=jobmaster_address,
        )
        self._task_executors = TaskExecutorGateways(security)
        self._canceller = TaskCanceller(
            self.job_id,
            config,
            lock=self._lock,
            task_executors=self._task_executors,
            task_managers=self._slot_allocator,
            update_task_state=self.update_task_state,
            take_unconfirmed_as_cancelled=self._take_unconfirmed_as_cancelled,
            terminated=self._terminated,
        )
        # What the current attempt restores (jobmanager.checkpoint.restore_plan).
        self._restore = NOTHING_RESTORED
        # FLIP-147: checkpoints go on after some tasks finished, and a finishing task
        # waits for its final checkpoint (CheckpointingConfig.final_checkpoints).
        self._final_checkpoints = CheckpointingConfig.from_config(config).final_checkpoints
        # What the checkpoint coordinator hears of the tasks (and the coordinator itself).
        self._checkpoints = CheckpointCoordinatorDeActivator(
            self.job_id, final_checkpoints=self._final_checkpoints
        )
        # Set by a completed stop with savepoint: the cancellation that follows ends FINISHED.
        self._stopped_with_savepoint = False
        self.restarts = 0

    @property
    def job_id(self) -> str:
        return self.graph.job_graph.job_id

    @property
    def checkpoint_coordinator(self) -> CheckpointCoordinator | None:
        """The job's CheckpointCoordinator; None while it takes no checkpoints."""
        return self._checkpoints.coordinator

    @checkpoint_coordinator.setter
    def checkpoint_coordinator(self, coordinator: CheckpointCoordinator | None) -> None:
        self._checkpoints.coordinator = coordinator

    @property
    def failure_cause(self) -> str:
        """Why the job failed or last failed over (``ExecutionFailureHandler``)."""
        return self._failures.failure_cause

    @failure_cause.setter
    def failure_cause(self, cause: str) -> None:
        self._failures.failure_cause = cause

    @property
    def failure_ms(self) -> int | None:
        """When the last failover began (ms since the epoch), for recovery-time figures."""
        return self._failures.failure_ms

    # -- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        self._transition(JobStatus.RUNNING)
        self._thread = threading.Thread(
            target=self._allocate_and_deploy, name=f"scheduler-{self.job_id[:8]}", daemon=True
        )
        self._thread.start()

    def _allocate_and_deploy(self) -> None:
        """Deploy the current attempt into the slot pool's slots, asking the
        ResourceManager first for those missing (all of them for the first attempt)."""
        while True:
            try:
                self._slot_allocator.acquire_missing_slots(self.graph.required_slots())
            except WeirError as exc:
                with self._lock:
                    running = self.status is JobStatus.RUNNING
                if running:
                    self._fail_job(f"{type(exc).__name__}: {exc}")
                else:  # cancelled or failed while it waited: nothing to deploy
                    self._cancel_undeployed(list(self.graph.all_executions()))
                return
            if not self._await_leadership():
                return
            with self._lock:
                slots = self._slot_allocator.slots
                if self.status is JobStatus.RUNNING and self._slot_allocator.missing(
                    self.graph.required_slots()
                ):
                    continue  # a TaskManager was lost meanwhile: ask for its slots too
                self._slot_allocator.deploying_into(slots)
                if self.status is not JobStatus.RUNNING:  # cancelled or failed meanwhile
                    for ev in self.graph.all_executions():
                        if not ev.current.state.is_terminal:
                            ev.current.transition(ExecutionState.CANCELED)
                    self._check_terminal()
                    return
                self.graph.assign_slots(slots)
                for ev in self.graph.all_executions():
                    ev.current.transition(ExecutionState.SCHEDULED)
                break
        executions = list(self.graph.all_executions())
        for index, ev in enumerate(executions):
            if not self._deploy(ev):
                # The attempt failed or was cancelled mid-deployment: its tasks not yet
                # deployed will never run, and a restart waits for every task of the
                # attempt to be terminal, so end them now rather than at the cancel timeout.
                self._cancel_undeployed(executions[index + 1 :])
                return

    def _await_leadership(self) -> bool:
        """True once leadership is confirmed; False when the job stopped running first
        (leadership lost: the JobMaster is being closed). Polls while unconfirmed."""
        if self._confirm_leadership is None:
            return True
        warned = False
        while not self._confirm_leadership():
            with self._lock:
                if self.status is not JobStatus.RUNNING or self._leadership_revoked():
                    return False
            if not warned:
                logger.warning(
                    "job %s: leadership unconfirmed; attempt %d waits before deploying",
                    self.job_id,
                    self.graph.attempt_number,
                )
                warned = True
            time.sleep(_LEADERSHIP_POLL_S)  # polling interval; the confirmation decides
        return True

    def _cancel_undeployed(self, executions: list[ExecutionVertex]) -> None:
        with self._lock:
            for ev in executions:
                if ev.current.state in (ExecutionState.CREATED, ExecutionState.SCHEDULED):
                    ev.current.transition(ExecutionState.CANCELED)
            self._changed.notify_all()
            self._check_terminal()

    def offer_slots(self, request_id: str, slots: list[SlotInfo]) -> tuple[bool, str]:
        """The ResourceManager offers the slots of a request (JobMaster.OfferSlots); taken
        only while this scheduler waits for that request. Not taken: the ResourceManager
        frees them."""
        return self._slot_allocator.offer_slots(request_id, slots)

    def _deploy(self, ev: ExecutionVertex) -> bool:
        with self._lock:
            if self.status is not JobStatus.RUNNING:
                ev.current.transition(ExecutionState.CANCELED)
                self._check_terminal()
                return False
            ev.current.transition(ExecutionState.DEPLOYING)
            tdd = self.graph.deployment_descriptor(ev)
            restore = self._restore
            restored = restore.state_of(ev.job_vertex.vertex_id, ev.subtask_index)
            if restored is not None:
                tdd = dataclasses.replace(tdd, restored_state=restored)
            if restore.checkpoint_id:
                tdd = dataclasses.replace(tdd, restored_checkpoint_id=restore.checkpoint_id)
            if restore.is_finished(ev.job_vertex.vertex_id, ev.subtask_index):
                tdd = dataclasses.replace(tdd, finished_on_restore=True)
        slot = ev.current.slot
        assert slot is not None
        try:
            self._task_executors.submit_task(
                slot.rpc_address, tdd, self._jobmaster_address(), TASK_RPC_TIMEOUT_S
            )
        except WeirError as exc:
            if isinstance(exc, (ServiceUnavailableError, RemoteTimeoutError)):
                # Its TaskManager cannot be reached: a restart must not reuse its slots,
                # even before the ResourceManager has declared it lost.
                with self._lock:
                    self._slot_allocator.task_manager_unreachable(
                        slot.resource_id, slot.rpc_address
                    )
            self.update_task_state(
                ev.current.attempt_id,
                ExecutionState.FAILED,
                f"deploying {ev.task_name} to TaskManager {slot.resource_id} failed: {exc}",
            )
            return False
        return True

    # -- task state ------------------------------------------------------------------
    def update_task_state(
        self,
        attempt_id: str,
        state: ExecutionState,
        cause: str | None,
        io_metrics: IOMetricsInfo | None = None,
        *,
        throwable_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR,
    ) -> bool:
        """A task's report. A FAILED one comes with ``throwable_type``: whether a restart
        can cure it (``weir.core.throwable_classifier``, as the task classified it)."""
        with self._lock:
            ev = self.graph.find(attempt_id)
            if ev is None or ev.current.state.is_terminal:
                return False
            if ev.current.state is ExecutionState.CANCELING:
                if not state.is_terminal:
                    return False  # a report sent before the cancel reached the task
                if state is ExecutionState.FAILED and self.status is JobStatus.CANCELLING:
                    # Its job is being cancelled: what it failed on is the cancellation's
                    # doing (an input released by a cancelled producer), not a cause
                    # (Flink's Execution ends CANCELED when it fails while CANCELING).
                    lines = (cause or "").strip().splitlines()
                    logger.info(
                        "job %s: %s ended while being cancelled (%s); it is CANCELED",
                        self.job_id,
                        ev.task_name,
                        lines[-1] if lines else "no cause given",
                    )
                    state, cause = ExecutionState.CANCELED, None
            if state is ExecutionState.CANCELED and self._stopped_with_savepoint:
                # Stopped after its terminating savepoint completed (and its sinks were
                # told to commit it): nothing is left for it to do, and it is FINISHED,
                # as flink stop reports every task of the job.
                state = ExecutionState.FINISHED
            ev.current.transition(state)
            if io_metrics is not None:
                ev.current.io_metrics = io_metrics
            self._changed.notify_all()
            if state is ExecutionState.RUNNING and all(
                e.current.state is ExecutionState.RUNNING for e in self.graph.all_executions()
            ):
                # Once per attempt: the last of its tasks to start (a lifecycle milestone,
                # what recovery times are measured to).
                logger.info(
                    "job %s: every task of attempt %d is RUNNING",
                    self.job_id,
                    self.graph.attempt_number,
                )
            if state is ExecutionState.FAILED:
                ev.current.failure_cause = cause or "unknown failure"
                logger.info("job %s: %s failed", self.job_id, ev.task_name)
                if self.status is JobStatus.RUNNING:
                    self._fail_over(
                        f"{ev.task_name} failed:\n{ev.current.failure_cause}", throwable_type, ev
                    )
                else:
                    self._late_failure(ev, throwable_type)
            else:
                self._checkpoints.task_changed(
                    ev, state, self.graph, running=self.status is JobStatus.RUNNING
                )
            self._check_terminal()
            return True

    def end_of_data(self, attempt_id: ExecutionAttemptId) -> None:
        """A task of the current attempt finished its operators and waits for its final
        checkpoint (FLIP-147). Once every task has (or has exited), that checkpoint is
        triggered at once rather than at the next interval, so a bounded job ends as soon
        as its data does."""
        with self._lock:
            ev = self.graph.find(attempt_id)
            coordinator = self.checkpoint_coordinator
            if ev is None or coordinator is None or self.status is not JobStatus.RUNNING:
                return
            self._checkpoints.end_of_data(attempt_id, self.graph, self._is_finished)

    def fail_over(self, cause: str) -> None:
        """A failure of the whole job (e.g. too many failed checkpoints): restart or fail."""
        with self._lock:
            if self.status is JobStatus.RUNNING:
                self._fail_over(cause)
                self._check_terminal()

    def _fail_over(
        self,
        cause: str,
        throwable_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR,
        failed: ExecutionVertex | None = None,
    ) -> None:
        """Under the lock, status RUNNING: restart if the strategy allows, else fail; fail
        at once, whatever the strategy, for a failure no restart can cure (Flink's
        ExecutionFailureHandler with a NonRecoverableError). ``failed``: the task whose
        failure it is; None for a failure of the whole job."""
        cause = self._said(cause)
        self._checkpoints.stop()
        non_recoverable = throwable_type is ThrowableType.NON_RECOVERABLE_ERROR
        failures = self._failures
        restart = failures.handle_failure(cause, self.graph.attempt_number, non_recoverable, failed)
        if not restart:
            if non_recoverable:
                logger.info(
                    "job %s: not restarted (whatever %s allows): no restart can cure %s",
                    self.job_id,
                    failures.restart_strategy,
                    failures.exception_history()[-1].summary,
                )
            elif self.restarts:
                logger.info(
                    "job %s: %s allows no further restart", self.job_id, failures.restart_strategy
                )
            self._transition(JobStatus.FAILING)
            self._canceller.cancel_all(self.graph)
            return
        backoff_ms = failures.backoff_time_ms()
        lines = [line for line in cause.splitlines() if line.strip()] or [cause]
        logger.info(
            "job %s: restarting in %d ms (%s) after: %s%s",
            self.job_id,
            backoff_ms,
            failures.restart_strategy,
            lines[0],
            f" ... {lines[-1].strip()}" if len(lines) > 1 else "",
        )
        self._transition(JobStatus.RESTARTING)
        end_undeployed(self.graph)
        targets = cancel_targets(self.graph)
        threading.Thread(
            target=self._restart,
            args=(self.graph, targets, backoff_ms),
            daemon=True,
            name=f"restart-{self.job_id[:8]}",
        ).start()

    def _late_failure(self, ev: ExecutionVertex, throwable_type: ThrowableType) -> None:
        """Under the lock: a task of the attempt failed after the failover began
        (``ExecutionFailureHandler.handle_late_failure``); one no restart can cure calls off
        a restart under way."""
        if self._failures.handle_late_failure(
            ev, throwable_type, restarting=self.status is JobStatus.RESTARTING
        ):
            # The restart thread finds the job no longer RESTARTING and deploys nothing.
            self._fail_job(self.failure_cause)

    def exception_history(self) -> tuple[ExceptionHistoryEntry, ...]:
        """The job's failovers, oldest first (``web.exception-history-size`` at most)."""
        with self._lock:
            return self._failures.exception_history()

    def _restart(self, old: ExecutionGraph, targets: list[CancelTarget], backoff_ms: int) -> None:
        coordinator = self.checkpoint_coordinator
        if coordinator is not None:
            coordinator.abort_pending("the job is restarting")
        deadline = time.monotonic() + max(backoff_ms / 1000, 0)
        self._canceller.deliver(targets)
        cancel_deadline = time.monotonic() + CANCEL_CONFIRM_TIMEOUT_S
        with self._lock:
            while not all(ev.current.state.is_terminal for ev in old.all_executions()):
                left = cancel_deadline - time.monotonic()
                if left <= 0:
                    logger.warning(
                        "job %s: tasks of the failed attempt did not confirm their "
                        "cancellation; taking them as cancelled and deploying the next "
                        "attempt into other slots",
                        self.job_id,
                    )
                    break
                self._changed.wait(left)
        # The backoff is the restart strategy's (restart-strategy.*.delay): a wait by design.
        time.sleep(max(0.0, deadline - time.monotonic()))
        restored = None
        warned = False
        while coordinator is not None:
            try:
                restored = coordinator.restore_latest()
                break
            except CheckpointStorageUnavailableError as exc:
                # The checkpoint storage did not answer (an outage): the restart strategy
                # decides, as for any failure.
                self._restore_failed(f"{type(exc).__name__}: {exc}", old)
                return
            except LeaderLostError as exc:
                # The HA store cannot be read now (its server unreachable, say): no fault of
                # the job's. Leadership decides: it is confirmed again (the store answers)
                # and the restore goes on, or it is revoked and the job is the next
                # leader's (cancel() ends this attempt SUSPENDED).
                with self._lock:
                    if self.status is not JobStatus.RESTARTING or self._leadership_revoked():
                        return
                if self._confirm_leadership is None:
                    self._fail_job(f"{type(exc).__name__}: {exc}")
                    return
                if not warned:
                    logger.warning(
                        "job %s: the restart waits: its latest checkpoint cannot be "
                        "restored now (%s)",
                        self.job_id,
                        exc,
                    )
                    warned = True
                time.sleep(_RESTORE_RETRY_S)  # retry interval; leadership decides the end
            except WeirError as exc:
                self._fail_job(f"{type(exc).__name__}: {exc}")
                return
        with self._lock:
            if self.status is not JobStatus.RESTARTING:  # cancelled meanwhile
                return
            self._checkpoints.new_attempt()
            self._restore = (
                restore_plan(
                    self.graph.job_graph, restored.metadata.operator_states, restored.checkpoint_id
                )
                if restored is not None
                else NOTHING_RESTORED
            )
            self.restarts += 1
            self.graph = ExecutionGraph(self.graph.job_graph, old.attempt_number + 1)
            if self._on_restart is not None:
                self._on_restart(self.graph.attempt_number)
            # The next attempt deploys into the slots kept in the pool and asks only for
            # what is missing (Flink's slot pool across restarts): one TaskManager lost,
            # one replaced. Slots whose old tasks may still run are given back (they stay
            # RELEASING on their TaskExecutors until those tasks end), never deployed into
            # again; so are those of TaskManagers that could not be reached.
            busy = {
                ev.current.slot.allocation_id
                for ev in old.all_executions()
                if ev.current.slot is not None and not ev.current.state.is_terminal
            }
            unusable = self._slot_allocator.take_unusable(busy)
            self._transition(JobStatus.RUNNING)
        if unusable:
            self._slot_allocator.release_slots(unusable)
        self._allocate_and_deploy()

    def _restore_failed(self, cause: str, old: ExecutionGraph) -> None:
        """The checkpoint storage did not answer the restore (an outage): one more failure
        for the restart strategy, which restarts again after its delay or fails the job.
        Neither an older checkpoint nor giving up at once: the outage may end (Flink
        leaves transient failures on recovery to the restart strategy, FLINK-22502)."""
        with self._lock:
            if self.status is not JobStatus.RESTARTING:  # cancelled meanwhile
                return
            restart = self._failures.handle_failure(cause, self.graph.attempt_number)
            if restart:
                backoff_ms = self._failures.backoff_time_ms()
                logger.info(
                    "job %s: restoring failed, restarting in %d ms (%s): %s",
                    self.job_id,
                    backoff_ms,
                    self._failures.restart_strategy,
                    cause,
                )
        if not restart:
            logger.info(
                "job %s: %s allows no further restart", self.job_id, self._failures.restart_strategy
            )
            self._fail_job(cause)
            return
        threading.Thread(
            target=self._restart,
            args=(old, [], backoff_ms),
            daemon=True,
            name=f"restart-{self.job_id[:8]}",
        ).start()

    def set_initial_state(
        self,
        operator_states: Mapping[OperatorId, OperatorState],
        source: str,
        allow_non_restored: bool,
        *,
        checkpoint_id: int = 0,
    ) -> None:
        """Deploy the first attempt with this state (``weir run -s``) of checkpoint
        ``checkpoint_id``, at the job's parallelism (rescaled when it differs). Call
        before ``start``. Raises JobSubmissionError when the state does not fit the job
        (``initial_restore_plan``)."""
        plan = initial_restore_plan(
            self.graph.job_graph, operator_states, source, allow_non_restored, checkpoint_id
        )
        with self._lock:
            self._restore = plan

    def _is_finished(self, ev: ExecutionVertex) -> bool:
        """Finished for checkpoints: exited after its final checkpoint, or deployed as
        finished on restore (it runs nothing and acknowledges nothing)."""
        return ev.current.state is ExecutionState.FINISHED or self._restore.is_finished(
            ev.job_vertex.vertex_id, ev.subtask_index
        )

    def checkpoint_plan(self) -> CheckpointPlan | None:
        """The tasks of a checkpoint of the current attempt now (``plan_checkpoint``), or
        None when it cannot be taken (the job is not RUNNING, among others)."""
        with self._lock:
            if self.status is not JobStatus.RUNNING:
                return None
            finished = {
                ev.current.attempt_id for ev in self.graph.all_executions() if self._is_finished(ev)
            }
            return plan_checkpoint(self.graph, finished, self._final_checkpoints)

    def attempt_number_of(self, attempt_id: str) -> int | None:
        """The job attempt a task belongs to, or None if it is not of the current one."""
        with self._lock:
            if self.graph.find(attempt_id) is None:
                return None
            return self.graph.attempt_number

    def task_address(self, attempt_id: ExecutionAttemptId) -> str | None:
        with self._lock:
            ev = self.graph.find(attempt_id)
            if ev is None or ev.current.slot is None:
                return None
            return ev.current.slot.rpc_address

    def task_manager_lost(self, resource_id: str, reason: str) -> None:
        cause = f"TaskManagerLostError: TaskManager {resource_id} was lost: {reason}"
        with self._lock:
            addresses = {
                ev.current.slot.rpc_address
                for ev in self.graph.all_executions()
                if ev.current.slot is not None and ev.current.slot.resource_id == resource_id
            }
            self._slot_allocator.task_manager_lost(resource_id, addresses)
        for address in addresses:
            self._task_executors.forget(address)
        with self._lock:
            lost = [
                ev
                for ev in self.graph.all_executions()
                if ev.current.slot is not None
                and ev.current.slot.resource_id == resource_id
                and not ev.current.state.is_terminal
            ]
        for ev in lost:
            self.update_task_state(ev.current.attempt_id, ExecutionState.FAILED, cause)

    def cancel(self) -> None:
        with self._lock:
            if self.status.is_terminal_state() or self.status is JobStatus.CANCELLING:
                return
            self._transition(JobStatus.CANCELLING)
            self._canceller.cancel_all(self.graph)
            self._check_terminal()

    def stop_after_savepoint(self) -> None:
        """End the job after its stop-with-savepoint completed: its tasks are cancelled
        and it ends FINISHED (Flink's ``flink stop``), not CANCELED."""
        with self._lock:
            if self.status is not JobStatus.RUNNING:
                return
            self._stopped_with_savepoint = True
        self.cancel()

    def _fail_job(self, cause: str) -> None:
        with self._lock:
            if self.status.is_terminal_state():
                return
            self.failure_cause = self._said(cause)
            self._transition(JobStatus.FAILING)
            self._canceller.cancel_all(self.graph)
            self._check_terminal()

    def _take_unconfirmed_as_cancelled(self) -> None:
        """The job's tasks that did not confirm their cancellation in time lost their
        reports on the way (the TaskCanceller's watchdog): they end CANCELED."""
        with self._lock:
            for ev in self.graph.all_executions():
                if not ev.current.state.is_terminal:
                    logger.warning(
                        "job %s: %s did not confirm its cancellation; taking it as cancelled",
                        self.job_id,
                        ev.task_name,
                    )
                    ev.current.transition(ExecutionState.CANCELED)
            self._check_terminal()

    def _check_terminal(self) -> None:
        """Under the lock: end the job if every task has ended. With leader election the
        end waits for the verdict on leadership, on a thread of its own (``_conclude``)."""
        target = self._terminal_target()
        if target is None:
            return
        if target is JobStatus.FAILED and self.status is JobStatus.RUNNING:
            self.failure_cause = self.failure_cause or "tasks ended without finishing"
        if self._confirm_leadership is None:
            self._transition(target)
        elif not self._concluding:
            self._concluding = True
            threading.Thread(
                target=self._conclude, daemon=True, name=f"conclude-{self.job_id[:8]}"
            ).start()

    def _terminal_target(self) -> JobStatus | None:
        """Under the lock: the status the job ends in now that its tasks' states are what
        they are; None while a task has not ended or the job is not ending."""
        executions = self.graph.all_executions()
        if not all(ev.current.state.is_terminal for ev in executions):
            return None
        if self.status is JobStatus.RUNNING and all(
            ev.current.state is ExecutionState.FINISHED for ev in executions
        ):
            return JobStatus.FINISHED
        if self.status is JobStatus.FAILING:
            return JobStatus.FAILED
        if self.status is JobStatus.CANCELLING:
            return JobStatus.FINISHED if self._stopped_with_savepoint else JobStatus.CANCELED
        if self.status is JobStatus.RUNNING:  # every task ended but not all finished
            return JobStatus.FAILED
        return None

    def _conclude(self) -> None:
        """End the job once leadership is decided: confirmed, in its status; revoked, or
        ZooKeeper's answer lost, SUSPENDED. While in doubt (the connection suspended) it
        asks again; a session that expires ends the doubt with a revocation."""
        assert self._confirm_leadership is not None
        leading = self._confirm_leadership()
        warned = False
        while not leading and not self._leadership_revoked():
            if not warned:
                logger.warning(
                    "job %s: leadership unconfirmed; the job ends once it is decided",
                    self.job_id,
                )
                warned = True
            time.sleep(_LEADERSHIP_POLL_S)  # polling interval; the confirmation decides
            leading = self._confirm_leadership()
        with self._lock:
            self._concluding = False
            target = self._terminal_target()
            if target is None:  # restarted or suspended meanwhile
                return
            if leading:
                self._transition(target)
                return
            logger.warning(
                "job %s: this JobMaster no longer leads: the job is SUSPENDED here, not %s; "
                "it was taken over by the new leader, which recovers it from its latest "
                "checkpoint (nothing of the job's is deleted here)",
                self.job_id,
                target.name,
            )
            self._transition(JobStatus.SUSPENDED)

    def _said(self, cause: str) -> str:
        """``cause``, or when it says nothing (an error raised without a message, say)
        what is known of the failure instead: a job never fails without a cause."""
        if cause.strip():
            return cause
        failed = [
            f"{ev.task_name} failed:\n{ev.current.failure_cause}"
            for ev in self.graph.all_executions()
            if ev.current.state is ExecutionState.FAILED and ev.current.failure_cause.strip()
        ]
        if failed:
            return failed[0]
        history = [
            e.failure_cause for e in self._failures.exception_history() if e.failure_cause.strip()
        ]
        if history:
            return history[-1]
        logger.error(
            "job %s failed without a cause being recorded: a defect; the master's log "
            "above says what happened",
            self.job_id,
        )
        return (
            f"job {self.job_id} failed in attempt {self.graph.attempt_number}, and no cause "
            "was recorded for it (a defect of Weir's; the master's log says what happened "
            "before)"
        )

    def _transition(self, status: JobStatus) -> None:
        if status is self.status:
            return
        if status is JobStatus.FAILED:
            self.failure_cause = self._said(self.failure_cause)
        logger.info(
            "job %s (%s) switched from %s to %s",
            self.graph.job_graph.job_name,
            self.job_id,
            self.status.name,
            status.name,
        )
        self.status = status
        with self._lock:
            self._changed.notify_all()
        terminal = status.is_terminal_state()
        if terminal:
            self.end_time_ms = int(time.time() * 1000)
            self._slot_allocator.job_ended(status)
        self._on_status(status)
        if terminal:
            # Only once the JobMaster has heard: wait_terminated() is what its close()
            # waits for before it stops the workers _on_status hands work to.
            self._terminated.set()

    def close(self) -> None:
        """Stop the thread that calls the coordinator, and close the channels to the
        ResourceManager and the TaskExecutors (the JobMaster closes; the job is over),
        once the job's slots are released."""
        self._checkpoints.close()
        self._slot_allocator.close()
        self._task_executors.close()

    def details(self, jobmaster_address: str) -> JobDetailsInfo:
        with self._lock:
            return JobDetailsInfo(
                job_id=self.job_id,
                job_name=self.graph.job_graph.job_name,
                status=self.status.name,
                start_time_ms=self.start_time_ms,
                end_time_ms=self.end_time_ms,
                failure_cause=self.failure_cause,
                tasks=self.graph.task_statuses(),
                jobmaster_address=jobmaster_address,
                exception_history=self._failures.exception_history(),
            )

    def wait_terminated(self, timeout: float | None) -> bool:
        return self._terminated.wait(timeout)
