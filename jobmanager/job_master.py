"""The JobMaster of one job: its own gRPC endpoint, the scheduler, collect buffers."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor

import grpc

from weir.core import config as cfg
from weir.core import rpc, s3_settings
from weir.core.checkpoint import (
    CheckpointingConfig,
    CheckpointMetrics,
    CheckpointStatsSnapshot,
    TaskStateSnapshot,
    create_checkpoint_storage,
)
from weir.core.checkpoint.savepoint_storage import (
    new_savepoint_directory,
    savepoint_parent_directory,
)
from weir.core.deployment import ExecutionState
from weir.core.errors import CheckpointError, JobSubmissionError
from weir.core.highavailability import HighAvailabilityServices, LeaderContender
from weir.core.ids import ExecutionAttemptId
from weir.core.job_graph import JobGraph, OperatorKind
from weir.core.job_info import IOMetricsInfo, JobDetailsInfo
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.core.throwable_classifier import ThrowableType
from weir.jobmanager.checkpoint import (
    CheckpointCoordinator,
    ThreadScheduledExecutor,
    system_clock_ms,
)
from weir.jobmanager.checkpoint.resume_hint import resume_hint
from weir.jobmanager.checkpoint.task_gateway import TaskExecutorCheckpointGateway
from weir.jobmanager.collect_buffer import CollectBuffer, FetchResult
from weir.jobmanager.execution_graph import ExecutionGraph, SlotInfo
from weir.jobmanager.kv_state_location_registry import KvStateLocationRegistry
from weir.jobmanager.scheduler import DefaultScheduler

logger = logging.getLogger(__name__)

# How long the end of a job waits for the checkpoint coordinator's shutdown (which may
# delete checkpoints) before reporting the result anyway; far below the client's result
# wait (WaitForJobResult re-asks every 30 s).
_SHUTDOWN_REPORT_WAIT_S = 10.0
# A collect push that finds the buffer full is answered at once with this delay; the
# sink retries after it (backing off further while the buffer stays full). A client that
# reads drains a 64-batch buffer in well under this, so the sink rarely waits longer than
# it takes the buffer to make room; no server thread waits meanwhile.
COLLECT_RETRY_AFTER_MS = 20


class JobMaster(LeaderContender):
    def __init__(
        self,
        job_graph: JobGraph,
        config: Mapping[str, str],
        ha_services: HighAvailabilityServices,
        on_terminated: Callable[[JobDetailsInfo], None],
        host: str = "127.0.0.1",
        *,
        advertised_host: str = "",
        on_changed: Callable[[], None] = lambda: None,
    ) -> None:
        """``host`` is the interface the JobMaster binds; ``advertised_host`` (else
        ``host``) the address TaskManagers and the Dispatcher are told. ``on_terminated``
        gets the final details once the job is globally terminal; ``on_changed`` is called,
        under the scheduler's lock, on every other change of the job's status (it must
        only wake whoever waits: the Dispatcher's result waits)."""
        self.job_graph = job_graph
        self._config = {**config, **job_graph.config}
        # The job's s3.* keys, over the cluster's, before its storage is opened.
        s3_settings.configure(self._config)
        # The cluster's settings, never the job's: a job must not weaken them.
        self._security = SecurityConfig.from_config(config)
        self._ha = ha_services
        self._on_terminated = on_terminated
        self._on_changed = on_changed
        self._host = host
        self._advertised_host = advertised_host
        self._address = ""
        self._server: grpc.Server | None = None
        self._rm_address: str | None = None
        self._rm_retriever = ha_services.get_resource_manager_leader_retriever()
        self._election = ha_services.get_job_master_leader_election(job_graph.job_id)
        self.scheduler = DefaultScheduler(
            ExecutionGraph(job_graph),
            self._config,
            lambda: self._address,
            lambda: self._rm_address,
            self._on_status,
            on_restart=self._on_restart,
            security=self._security,
            confirm_leadership=self._confirm_leadership,
            leadership_revoked=lambda: self._suspended,
            fencing_token=lambda: self._leader_token or "",
        )
        checkpointing = CheckpointingConfig.from_config(self._config)
        # With checkpoints, collect batches wait for the checkpoint that covers them, so a
        # restart never shows the client a record twice (collect_buffer's docstring).
        self._collect: dict[str, CollectBuffer] = {
            op.operator_id: CollectBuffer(vertex.parallelism, hold_back=checkpointing.enabled)
            for vertex in job_graph.vertices
            for op in vertex.operators
            if op.kind is OperatorKind.COLLECT
        }
        self.kv_state_locations = KvStateLocationRegistry(job_graph.job_id)
        self._closed = False
        self._suspended = False
        self._leader_token: str | None = None
        self._close_lock = threading.Lock()
        self._timer: ThreadScheduledExecutor | None = None
        # Acks complete checkpoints, which writes _metadata: off the gRPC threads, in order.
        self._ack_worker = ThreadPoolExecutor(1, thread_name_prefix=f"acks-{self.job_id[:8]}")
        self.checkpoint_coordinator: CheckpointCoordinator | None = None
        if checkpointing.enabled:
            storage = create_checkpoint_storage(
                self._config, job_graph.job_id, metadata_dir=ha_services.completed_checkpoint_dir()
            )
            # Credentials or permissions that cannot write checkpoints refuse the job now,
            # saying so, rather than failing every checkpoint of every restart.
            storage.check_writable()
            self._timer = ThreadScheduledExecutor(f"checkpoint-timer-{self.job_id[:8]}")
            self.checkpoint_coordinator = CheckpointCoordinator(
                job_id=job_graph.job_id,
                config=checkpointing,
                storage=storage,
                id_counter=ha_services.create_checkpoint_id_counter(job_graph.job_id),
                store=ha_services.create_completed_checkpoint_store(
                    job_graph.job_id, checkpointing.num_retained
                ),
                gateway=TaskExecutorCheckpointGateway(self.scheduler.task_address, self._security),
                plan_provider=self.scheduler.checkpoint_plan,
                clock=system_clock_ms,
                executor=self._timer,
                on_failure=self._on_checkpoint_failure,
                on_completed=self._on_checkpoint_completed,
                confirm_leadership=self._confirm_leadership,
            )
            self.scheduler.checkpoint_coordinator = self.checkpoint_coordinator

    @property
    def job_id(self) -> str:
        return self.job_graph.job_id

    @property
    def address(self) -> str:
        return self._address

    @property
    def collect_operator_ids(self) -> list[str]:
        return list(self._collect)

    def start(self) -> str:
        from weir.jobmanager.service import JobMasterServicer  # noqa: PLC0415 (import cycle)

        try:
            self._restore_initial_state()
        except BaseException:
            self._stop_workers()
            raise
        server = rpc.create_server(max_workers=16, security=self._security)
        JobMasterServicer.register(self, server)
        self._address = rpc.bind(server, self._host, 0, advertise=self._advertised_host)
        server.start()
        self._server = server
        self._rm_retriever.start(self._on_resource_manager)
        self._election.start(self)
        return self._address

    def _restore_initial_state(self) -> None:
        """``weir run -s PATH``: register the retained checkpoint or savepoint as the job's
        latest and deploy the first attempt with its state. Errors refuse the submission."""
        coordinator = self.checkpoint_coordinator
        if coordinator is not None and self._recover_latest(coordinator):
            return
        path = cfg.get_with_deprecated_keys(self._config, cfg.STATE_RECOVERY_PATH)
        if not path:
            return
        if coordinator is None:
            msg = (
                f"job {self.job_id}: cannot start from {path}: checkpointing is off for this "
                "job; enable it (env.enable_checkpointing(...) or "
                "execution.checkpointing.interval) to resume from a checkpoint"
            )
            raise JobSubmissionError(msg)
        try:
            restored = coordinator.restore_from(path)
        except (CheckpointError, OSError) as exc:
            msg = (
                f"job {self.job_id}: cannot start from {path}: {exc}; give the path of a "
                "retained chk-N directory (or its _metadata) or of a savepoint"
            )
            raise JobSubmissionError(msg) from exc
        self.scheduler.set_initial_state(
            restored.metadata.operator_states,
            path,
            cfg.get_with_deprecated_keys(self._config, cfg.STATE_RECOVERY_IGNORE_UNCLAIMED_STATE),
            checkpoint_id=restored.checkpoint_id,
        )
        logger.info(
            "job %s: starting from checkpoint %d at %s",
            self.job_id,
            restored.checkpoint_id,
            path,
        )

    def _recover_latest(self, coordinator: CheckpointCoordinator) -> bool:
        """A job this JobMaster takes over (high availability: the previous leader died)
        resumes from the latest checkpoint registered for it, which wins over the path it
        was first submitted with. False when none is registered."""
        try:
            restored = coordinator.restore_latest()
        except CheckpointError as exc:
            msg = f"job {self.job_id}: cannot recover: {exc}"
            raise JobSubmissionError(msg) from exc
        if restored is None:
            return False
        self.scheduler.set_initial_state(
            restored.metadata.operator_states,
            restored.external_pointer,
            cfg.get(self._config, cfg.STATE_RECOVERY_IGNORE_UNCLAIMED_STATE),
            checkpoint_id=restored.checkpoint_id,
        )
        logger.info(
            "job %s: recovering from checkpoint %d at %s",
            self.job_id,
            restored.checkpoint_id,
            restored.external_pointer,
        )
        return True

    # -- leadership ------------------------------------------------------------------
    def grant_leadership(self, fencing_token: str) -> None:
        if self._suspended:
            # Revoked before: this JobMaster is being closed, and the job belongs to the
            # JobMaster the next leadership's Dispatcher starts (the latch may win again
            # with a new session while this one closes).
            logger.info("job %s: leadership granted again after a revocation; ignored", self.job_id)
            return
        logger.info(
            "JobMaster for job %s (%s) at %s is leader (session %s)",
            self.job_graph.job_name,
            self.job_id,
            self._address,
            fencing_token[:8],
        )
        self._leader_token = fencing_token
        self.scheduler.start()

    def revoke_leadership(self) -> None:
        """Leadership is gone (the connection to ZooKeeper was suspended or the session
        expired, or this master stops): from now on nothing is written: no checkpoint
        completes, none is deleted, and the job's end is not reported (the job is the next
        leader's). Its tasks are cancelled at once, so that they stop writing before the
        next leader restores the job, and the job ends SUSPENDED here once they ended."""
        self._suspended = True
        self._leader_token = None
        self._rm_address = None
        if self.checkpoint_coordinator is not None:
            self.checkpoint_coordinator.suspend()
        if self.scheduler.status.is_terminal_state():
            logger.info("JobMaster for job %s lost leadership", self.job_id)
            return
        logger.info(
            "JobMaster for job %s lost leadership: cancelling its tasks; the job is "
            "SUSPENDED here once they ended",
            self.job_id,
        )
        # Returns at once: the cancel calls go out from a thread of the scheduler's.
        self.scheduler.cancel()

    def _confirm_leadership(self) -> bool:
        token = self._leader_token
        return token is not None and self._election.confirm_leadership(token)

    def suspend_leadership(self, suspended: bool) -> None:
        if self.checkpoint_coordinator is not None:
            self.checkpoint_coordinator.pause(suspended)

    def _on_resource_manager(self, address: str | None, _token: str | None) -> None:
        if self._suspended:
            return  # deposed: it must not reach the next leader's ResourceManager
        self._rm_address = address

    # -- called by the servicer --------------------------------------------------------
    def update_task_execution_state(
        self,
        attempt_id: str,
        state: ExecutionState,
        cause: str,
        io_metrics: IOMetricsInfo | None = None,
        *,
        throwable_type: ThrowableType = ThrowableType.RECOVERABLE_ERROR,
    ) -> bool:
        if state.is_terminal:
            self.kv_state_locations.attempt_ended(attempt_id)
        return self.scheduler.update_task_state(
            attempt_id, state, cause or None, io_metrics, throwable_type=throwable_type
        )

    def push_collect(
        self,
        operator_id: str,
        subtask: int,
        batch: bytes,
        end: bool,
        *,
        epoch: int = 0,
        attempt_id: str = "",
    ) -> bool:
        """Add a collect sink's batch; False when the buffer stayed full (the sink
        retries). Batches of a task not of the current attempt are dropped: the restart
        that ended its attempt already discarded what it had held back."""
        buffer = self._collect.get(operator_id)
        if buffer is None:
            return True  # not a collect sink of this job: nothing to keep
        attempt = (
            self.scheduler.attempt_number_of(attempt_id)
            if attempt_id
            else self.scheduler.graph.attempt_number  # a caller that does not say: current
        )
        if attempt is None:
            logger.info(
                "job %s: dropping a collect batch of %s, a task of an earlier attempt",
                self.job_id,
                attempt_id,
            )
            return True
        # No wait: a full buffer answers "retry" at once, the sink backs off and retries.
        return buffer.push(subtask, batch, end, timeout=0.0, epoch=epoch, attempt=attempt)

    def offer_slots(self, request_id: str, slots: list[SlotInfo]) -> tuple[bool, str]:
        return self.scheduler.offer_slots(request_id, slots)

    def fetch_collect(self, operator_id: str, max_batches: int, timeout: float) -> FetchResult:
        buffer = self._collect.get(operator_id)
        if buffer is None:
            return FetchResult([], True)
        return buffer.fetch(max(1, max_batches), timeout)

    def acknowledge_checkpoint(
        self,
        attempt_id: str,
        checkpoint_id: int,
        snapshot: TaskStateSnapshot,
        metrics: CheckpointMetrics,
    ) -> None:
        coordinator = self.checkpoint_coordinator
        if coordinator is None:
            return
        self._ack_worker.submit(
            coordinator.receive_acknowledge,
            ExecutionAttemptId(attempt_id),
            checkpoint_id,
            snapshot,
            metrics,
        )

    def decline_checkpoint(self, attempt_id: str, checkpoint_id: int, reason: str) -> None:
        coordinator = self.checkpoint_coordinator
        if coordinator is None:
            return
        self._ack_worker.submit(
            coordinator.receive_decline, ExecutionAttemptId(attempt_id), checkpoint_id, reason
        )

    def end_of_data(self, attempt_id: str) -> None:
        """A task reached the end of its input and waits for its final checkpoint."""
        self.scheduler.end_of_data(ExecutionAttemptId(attempt_id))

    def _on_checkpoint_completed(self, checkpoint_id: int) -> None:
        # Under the coordinator's lock: only moves batches between in-memory queues.
        for buffer in self._collect.values():
            buffer.checkpoint_completed(checkpoint_id)

    def _on_restart(self, attempt_number: int) -> None:
        # Under the scheduler's lock, before the new attempt is deployed.
        for buffer in self._collect.values():
            buffer.restart(attempt_number)

    def _on_checkpoint_failure(self, error: CheckpointError) -> None:
        self.scheduler.fail_over(f"{type(error).__name__}: {error}")

    def details(self) -> JobDetailsInfo:
        return self.scheduler.details(self._address)

    def trigger_savepoint(
        self, target_directory: str | None = None, *, stop: bool = False, drain: bool = False
    ) -> Future[str]:
        """Take a savepoint of the running job under ``target_directory`` (default
        ``execution.checkpointing.savepoint-dir``): ``weir savepoint`` and, with ``stop``,
        ``weir stop`` (the job ends FINISHED once the savepoint completed; if it fails, the
        job keeps running; ``drain``: event time ends first, MAX_WATERMARK from the sources,
        so every timer and window fires into the savepoint). The future completes with the
        savepoint's directory, or fails with a CheckpointError saying why. Raises
        CheckpointError or ConfigurationError at once, saying why, when no savepoint can be
        taken now; the job is untouched then.

        The one entry point for every front end (gRPC, REST)."""
        status = self.scheduler.status
        if status is not JobStatus.RUNNING:
            why = {
                JobStatus.CREATED: "it has not started yet; retry once it is RUNNING",
                JobStatus.INITIALIZING: "it has not started yet; retry once it is RUNNING",
                JobStatus.RESTARTING: "it is restarting after a failure; retry once it is "
                "RUNNING again",
                JobStatus.CANCELLING: "it is being cancelled",
                JobStatus.FAILING: "it is failing",
            }.get(status, "it has ended")
            msg = (
                f"cannot take a savepoint of job {self.job_id}: it is {status.name}, and "
                f"a savepoint is taken only while a job is RUNNING; {why}"
            )
            raise CheckpointError(msg)
        coordinator = self.checkpoint_coordinator
        if coordinator is None:
            msg = (
                f"cannot take a savepoint of job {self.job_id}: checkpointing is off for it, "
                "and savepoints are taken through the checkpoint coordinator; submit it with "
                "checkpointing enabled (env.enable_checkpointing(...) or "
                "execution.checkpointing.interval)"
            )
            raise CheckpointError(msg)
        parent = savepoint_parent_directory(self._config, target_directory)
        directory = new_savepoint_directory(parent, self.job_id)
        logger.info(
            "job %s: %s into %s",
            self.job_id,
            "stop with savepoint" if stop else "savepoint",
            parent,
        )
        result = coordinator.trigger_savepoint(directory, terminate=stop, drain=drain)
        if stop:
            result.add_done_callback(self._stop_after_savepoint)
        return result

    def _stop_after_savepoint(self, savepoint: Future[str]) -> None:
        if savepoint.exception() is not None:
            logger.warning(
                "job %s: stop with savepoint failed, the job keeps running: %s",
                self.job_id,
                savepoint.exception(),
            )
            return
        # The tasks were told the savepoint completed (sinks commit what it covers, and a
        # sink that ends before it does commits it when resumed from the savepoint).
        self.scheduler.stop_after_savepoint()

    def checkpoint_statistics(self) -> CheckpointStatsSnapshot:
        coordinator = self.checkpoint_coordinator
        if coordinator is None:
            return CheckpointStatsSnapshot()
        return coordinator.statistics()

    def cancel(self) -> None:
        self.scheduler.cancel()

    def task_manager_lost(self, resource_id: str, reason: str) -> None:
        self.scheduler.task_manager_lost(resource_id, reason)

    def _on_status(self, status: JobStatus) -> None:
        if status.is_globally_terminal_state():
            coordinator = self.checkpoint_coordinator
            shutdown: Future[str] | None = None
            if coordinator is not None:
                # Storage I/O (deleting checkpoints): not on the scheduler's locked path. On
                # the acknowledgement thread, after any checkpoint it is completing: the
                # resume hint names the checkpoint that is kept, not one it subsumed.
                shutdown = self._ack_worker.submit(self._shut_down_checkpointing, status)
            for buffer in self._collect.values():
                if status is JobStatus.FINISHED:
                    # Every sink ended and nothing will be replayed.
                    buffer.release_all()
                buffer.close()
            details = self.scheduler.details(self._address)
            threading.Thread(
                target=self._report_terminated,
                args=(details, shutdown),
                daemon=True,
                name=f"jm-terminated-{self.job_id[:8]}",
            ).start()
        else:
            self._on_changed()  # a restart, say: clients waiting on the job hear of it

    def _shut_down_checkpointing(self, status: JobStatus) -> str:
        """Stop the coordinator; for a failed job, the hint that says how to resume it."""
        coordinator = self.checkpoint_coordinator
        assert coordinator is not None
        coordinator.shutdown(status)
        if status is not JobStatus.FAILED:
            return ""
        stats = coordinator.statistics()
        latest = stats.latest_completed or stats.latest_restored
        return resume_hint(
            coordinator.config.retention,
            latest.external_pointer if latest is not None else "",
            self._config.get(cfg.PROGRAM_KEY, ""),
        )

    def _report_terminated(self, details: JobDetailsInfo, shutdown: Future[str] | None) -> None:
        if self._suspended:
            # Cancelled because leadership was lost: the job is not over, the next leader
            # recovers it; the Dispatcher must not archive it nor drop its job graph.
            logger.info("job %s: stopped here without leadership; not reported", self.job_id)
            return
        if shutdown is not None:
            # The Dispatcher archives the checkpoint statistics when told: let the coordinator
            # first abort what was in progress, so the archive shows no checkpoint running.
            # Bounded: deleting checkpoints on a slow store must not hold the job's result.
            try:
                hint = shutdown.result(timeout=_SHUTDOWN_REPORT_WAIT_S)
                if hint:
                    self.scheduler.failure_cause += hint
                    details = dataclasses.replace(
                        details, failure_cause=details.failure_cause + hint
                    )
            except Exception:  # reported anyway; the statistics may show a checkpoint running
                logger.warning(
                    "job %s: checkpoint coordinator shutdown did not finish cleanly",
                    self.job_id,
                    exc_info=True,
                )
        self._on_terminated(details)

    def close(self) -> None:
        """Stop serving (after the job ended and its results were handed over)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if not self.scheduler.status.is_terminal_state():
            self.scheduler.cancel()
            self.scheduler.wait_terminated(30.0)
        self._stop_workers()
        self._election.stop()
        self._rm_retriever.stop()
        if self._server is not None:
            rpc.stop_server(self._server, 1.0)
        self.scheduler.close()

    def _stop_workers(self) -> None:
        self._ack_worker.shutdown(wait=True)
        if self._timer is not None:
            self._timer.close()

    def __enter__(self) -> JobMaster:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
