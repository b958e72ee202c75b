"""The Dispatcher: accepts JobGraphs, starts a JobMaster per job, answers for all jobs.

It never imports a JobMaster: the composition root hands it a factory, and it talks to
each JobMaster through that JobMaster's gRPC endpoint.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from weir.core import rpc
from weir.core.checkpoint import CheckpointingConfig, CheckpointStatsSnapshot
from weir.core.checkpoint.checkpoint_stats_codec import decode_checkpoint_stats
from weir.core.errors import (
    CheckpointError,
    JobNotFoundError,
    JobSubmissionError,
    LeaderLostError,
    ServiceUnavailableError,
    WeirError,
)
from weir.core.highavailability import HighAvailabilityServices, LeaderContender
from weir.core.ids import parse_job_id
from weir.core.job_graph import JobGraph, OperatorKind
from weir.core.job_graph_codec import decode_job_graph
from weir.core.job_info import JobDetailsInfo
from weir.core.job_plan import job_plan
from weir.core.job_status import JobStatus
from weir.core.security import SecurityConfig
from weir.proto import common_pb2, jobmaster_pb2_grpc, resourcemanager_pb2_grpc

logger = logging.getLogger(__name__)

# Finished jobs kept for `weir list -a` and result queries (Flink's jobstore.max-capacity).
MAX_ARCHIVED_JOBS = 1000
# A forwarded savepoint is answered within the job's checkpoint timeout (the coordinator
# aborts it then); this much more covers the JobMaster writing _metadata and answering.
_SAVEPOINT_RPC_GRACE_S = 30.0
# A JobMaster that stops answering while its job ends hands its final details to the
# Dispatcher as it closes; a details request waits this long for them.
_JOB_MASTER_GONE_WAIT_S = 10.0
# close() waits this long for JobMasters still starting (a start takes well under a
# second: the JobMaster's server and its leader election) before it closes the others.
_STARTING_WAIT_S = 30.0
# close() also waits for the JobMasters of ended jobs that other threads are closing: they
# may still be sending their last calls (a checkpoint notification) to TaskManagers that
# stop once close() returns. A JobMaster whose job ended closes in about a second (its
# workers finish, its server stops with a 1 s grace); a hung one must not hang the shutdown.
_CLOSING_WAIT_S = 10.0
# The ResourceManager gives a TaskExecutor 30 s to send a file's tail; this covers that
# and the hop to the ResourceManager.
_FILE_REQUEST_TIMEOUT_S = 40.0


class JobManagerRunner(Protocol):
    """What the factory returns: a started JobMaster reachable over gRPC."""

    @property
    def address(self) -> str: ...

    def close(self) -> None: ...


JobMasterFactory = Callable[
    [JobGraph, Callable[[JobDetailsInfo], None], Callable[[], None]], JobManagerRunner
]
"""Starts a JobMaster for the graph; the first callback receives the final details once
the job is globally terminal, the second is called (from any thread, maybe under the
JobMaster's locks: it only wakes the job's watchers) whenever the running job's status
changes (RESTARTING, RUNNING again), so that clients waiting on it hear of restarts."""


@dataclass
class _Job:
    graph: JobGraph
    runner: JobManagerRunner | None
    submitted_ms: int
    collect_ids: tuple[str, ...]
    final: JobDetailsInfo | None = None
    drained: set[str] = field(default_factory=set)
    final_checkpoints: CheckpointStatsSnapshot | None = None
    # Grows with every change the Dispatcher learns of (JobMaster started, status changed,
    # job ended).
    version: int = 1
    watchers: dict[int, Callable[[], None]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class JobWatch:
    """A registered watcher and the job's state when it was registered."""

    token: int
    version: int
    terminal: bool


class Dispatcher(LeaderContender):
    def __init__(
        self,
        config: Mapping[str, str],
        ha_services: HighAvailabilityServices,
        job_master_factory: JobMasterFactory,
        address: str = "",
        *,
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        """``on_shutdown``: asks the master process to stop (``ShutDownCluster``); None
        refuses that request (a cluster embedded in a program stops with the program)."""
        self._config = dict(config)
        self._on_shutdown = on_shutdown
        self._security = SecurityConfig.from_config(config)
        self._ha = ha_services
        self._factory = job_master_factory
        self._address = address
        self._jobs: OrderedDict[str, _Job] = OrderedDict()
        self._cond = threading.Condition()
        self._job_graph_store = ha_services.get_job_graph_store()
        self._election = ha_services.get_dispatcher_leader_election()
        self._rm_retriever = ha_services.get_resource_manager_leader_retriever()
        self._rm_address: str | None = None
        self._leader_token: str | None = None
        self._closed = False
        # Submissions whose JobMaster is still starting: close() waits for them, so it
        # cannot miss a JobMaster that started while it was closing the others.
        self._starting = 0
        self._closing_runners = 0
        """JobMasters of ended jobs being closed by other threads (``_close_runner``)."""
        self._next_token = 0
        self._runner_closed_listeners: list[Callable[[str], None]] = []

    @property
    def address(self) -> str:
        return self._address

    def start(self, address: str) -> None:
        self._address = address
        self._rm_retriever.start(self._on_resource_manager)
        self._election.start(self)

    def grant_leadership(self, fencing_token: str) -> None:
        """Lead: recover every job whose graph the store holds (with high availability,
        the jobs the previous leader was running), each from its latest checkpoint."""
        logger.info("Dispatcher at %s is leader (session %s)", self._address, fencing_token[:8])
        self._leader_token = fencing_token
        for job_id in self._job_graph_store.get_job_ids():
            with self._cond:
                known = job_id in self._jobs
            graph_bytes = None if known else self._job_graph_store.recover_job_graph(job_id)
            if graph_bytes is None:
                continue
            logger.info("recovering job %s from its stored job graph", job_id)
            try:
                self.submit_job(graph_bytes, recovered=True)
            except WeirError:
                # The job stays in the store: a later leader tries it again.
                logger.exception("job %s could not be recovered", job_id)

    def revoke_leadership(self) -> None:
        """Leadership is gone: jobs are stopped here without being reported or removed
        from the store; they belong to the next leader."""
        self._leader_token = None
        logger.info("Dispatcher at %s is no longer leader", self._address)

    def check_leadership(self) -> None:
        """Raises LeaderLostError when this Dispatcher does not lead (a client that
        reached a deposed leader looks the leader up again)."""
        token = self._leader_token
        if token is None or not self._election.has_leadership(token):
            msg = f"the Dispatcher at {self._address} is not the leader; ask the current one"
            raise LeaderLostError(msg)

    def _on_resource_manager(self, address: str | None, _token: str | None) -> None:
        self._rm_address = address

    # -- jobs ----------------------------------------------------------------------
    def submit_job(self, job_graph_bytes: bytes, *, recovered: bool = False) -> str:
        """``recovered``: the job is one of the previous leader's, from the job graph
        store; if its JobMaster cannot start, its graph stays there."""
        self.check_leadership()
        graph = decode_job_graph(job_graph_bytes)  # JobGraphError says what is wrong
        with self._cond:
            if self._closed:
                msg = "the Dispatcher is shutting down; submit the job to a running cluster"
                raise JobSubmissionError(msg)
            if graph.job_id in self._jobs:
                msg = f"a job with id {graph.job_id} was already submitted; use a new job id"
                raise JobSubmissionError(msg)
            collect_ids = tuple(
                op.operator_id
                for v in graph.vertices
                for op in v.operators
                if op.kind is OperatorKind.COLLECT
            )
            entry = _Job(graph, None, int(time.time() * 1000), collect_ids)
            self._jobs[graph.job_id] = entry
            self._starting += 1
        try:
            self._job_graph_store.put_job_graph(graph.job_id, job_graph_bytes)
            logger.info("received job %s (%s)", graph.job_name, graph.job_id)
            runner = self._start_runner(graph, keep_graph=recovered)
            with self._cond:
                closed = self._closed
                if not closed:
                    entry.runner = runner
                    self._bump(entry)
        finally:
            with self._cond:
                self._starting -= 1
                self._cond.notify_all()
        if closed:
            # close() ran while the JobMaster started: it waited for this submission, and
            # this JobMaster is the submission's to close.
            runner.close()
            msg = (
                f"the Dispatcher shut down while job {graph.job_id} was starting; "
                "submit it again to a running cluster"
            )
            raise JobSubmissionError(msg)
        return graph.job_id

    def _start_runner(self, graph: JobGraph, *, keep_graph: bool = False) -> JobManagerRunner:
        job_id = graph.job_id
        try:
            return self._factory(graph, self._job_terminated, lambda: self._job_changed(job_id))
        except Exception as exc:
            with self._cond:
                self._jobs.pop(graph.job_id, None)
            # A submission refused leaves nothing behind; a recovered job's JobMaster may
            # have failed for a passing reason (the HA store unreachable as it read its
            # checkpoints): its graph stays for the next leadership, never dropped.
            if not keep_graph:
                self._job_graph_store.remove_job_graph(graph.job_id)
            logger.warning("starting the JobMaster of %s failed", graph.job_id, exc_info=True)
            msg = f"could not start a JobMaster for job {graph.job_id}: {exc}"
            raise JobSubmissionError(msg) from exc

    def _job_changed(self, job_id: str) -> None:
        """The running job's status changed (its JobMaster says): wake its watchers."""
        with self._cond:
            entry = self._jobs.get(job_id)
            if entry is not None and entry.final is None:
                self._bump(entry)

    def _bump(self, entry: _Job) -> None:
        """Under the lock: the job changed; wake its watchers."""
        entry.version += 1
        for watcher in list(entry.watchers.values()):
            watcher()
        self._cond.notify_all()

    def watch(self, job_id: str, on_change: Callable[[], None]) -> JobWatch:
        """Call ``on_change`` (from any thread, maybe under the Dispatcher's lock: it must
        only schedule work) when the job changes, until ``unwatch``. Returns the job's
        version and whether it is globally terminal now. Raises JobNotFoundError."""
        entry = self._entry(job_id)
        with self._cond:
            self._next_token += 1
            entry.watchers[self._next_token] = on_change
            return JobWatch(self._next_token, entry.version, entry.final is not None)

    def unwatch(self, job_id: str, token: int) -> None:
        with self._cond:
            entry = self._jobs.get(job_id)
            if entry is not None:
                entry.watchers.pop(token, None)

    @property
    def watchers(self) -> int:
        """Result waits in progress (each a registered watcher, none a thread)."""
        with self._cond:
            return sum(len(e.watchers) for e in self._jobs.values())

    def on_runner_closed(self, listener: Callable[[str], None]) -> None:
        """``listener(address)`` after the JobMaster at that address is closed."""
        self._runner_closed_listeners.append(listener)

    def _job_terminated(self, details: JobDetailsInfo) -> None:
        # Archive the last checkpoint statistics while the JobMaster still serves.
        final_checkpoints = self._archive_checkpoint_statistics(details.job_id)
        with self._cond:
            entry = self._jobs.get(details.job_id)
            if entry is None:
                return
            entry.final_checkpoints = final_checkpoints
            entry.final = details
            self._bump(entry)
            close_now = not entry.collect_ids
        logger.info("job %s reached %s", details.job_id, details.status)
        try:
            self._job_graph_store.remove_job_graph(details.job_id)  # type: ignore[arg-type]
        except LeaderLostError as exc:
            # Deposed meanwhile: the graph stays for the next leader, which recovers the
            # job from its last checkpoint.
            logger.warning("job %s: its job graph stays stored: %s", details.job_id, exc)
        if close_now:
            self._close_runner(details.job_id)
        self._trim_archive()

    def _archive_checkpoint_statistics(self, job_id: str) -> CheckpointStatsSnapshot | None:
        with self._cond:
            entry = self._jobs.get(job_id)
            runner = entry.runner if entry else None
        if runner is None:
            return None
        try:
            return self._fetch_checkpoint_statistics(runner.address, job_id)
        except WeirError as exc:
            # The job's result matters more than its statistics: archive it without them.
            # (The error names the call and the cause; its stack trace adds nothing.)
            logger.warning("job %s: could not archive its checkpoint statistics: %s", job_id, exc)
            return None

    def _fetch_checkpoint_statistics(self, address: str, job_id: str) -> CheckpointStatsSnapshot:
        with rpc.create_channel(address, self._security) as channel:
            stub = jobmaster_pb2_grpc.JobMasterStub(channel)
            reply = rpc.call(
                "GetCheckpointStatistics",
                stub.GetCheckpointStatistics,
                common_pb2.JobIdRequest(job_id=job_id),
                timeout=10,
            )
        return decode_checkpoint_stats(reply)

    def checkpoint_statistics(self, job_id: str) -> CheckpointStatsSnapshot:
        """The job's checkpoint counts and history: from its JobMaster while it runs, the
        last ones archived with the job after it ended."""
        entry = self._entry(job_id)
        if entry.final is not None:
            return entry.final_checkpoints or CheckpointStatsSnapshot()
        runner = entry.runner
        if runner is None:  # still starting its JobMaster
            return CheckpointStatsSnapshot()
        return self._fetch_checkpoint_statistics(runner.address, job_id)

    def _close_runner(self, job_id: str) -> None:
        with self._cond:
            entry = self._jobs.get(job_id)
            runner = entry.runner if entry else None
            if entry is not None:
                entry.runner = None
            if runner is not None:
                self._closing_runners += 1
        if runner is not None:
            try:
                runner.close()
                for listener in self._runner_closed_listeners:
                    listener(runner.address)
            finally:
                with self._cond:
                    self._closing_runners -= 1
                    self._cond.notify_all()

    def _trim_archive(self) -> None:
        with self._cond:
            finished = [jid for jid, e in self._jobs.items() if e.final is not None]
            extra = finished[: max(0, len(finished) - MAX_ARCHIVED_JOBS)]
        for jid in extra:
            self._close_runner(jid)
            with self._cond:
                self._jobs.pop(jid, None)

    def _entry(self, job_id: str) -> _Job:
        job_id = parse_job_id(job_id)  # a malformed id is refused, not looked up
        with self._cond:
            entry = self._jobs.get(job_id)
        if entry is None:
            msg = (
                f"no job with id {job_id!r} is known to this cluster; `weir list -a` shows the jobs"
            )
            raise JobNotFoundError(msg)
        return entry

    def job_details(self, job_id: str) -> JobDetailsInfo:
        """The job's details, with the version they are of (``status_version``)."""
        entry = self._entry(job_id)
        with self._cond:
            version, final, runner = entry.version, entry.final, entry.runner
        if final is not None:
            return dataclasses.replace(final, status_version=version)
        if runner is None:
            return JobDetailsInfo(
                job_id,
                entry.graph.job_name,
                JobStatus.INITIALIZING.name,
                entry.submitted_ms,
                status_version=version,
            )
        try:
            with rpc.create_channel(runner.address, self._security) as channel:
                stub = jobmaster_pb2_grpc.JobMasterStub(channel)
                reply = rpc.call(
                    "GetJobDetails",
                    stub.GetJobDetails,
                    common_pb2.JobIdRequest(job_id=job_id),
                    timeout=10,
                )
        except WeirError:
            # The JobMaster may be closing because the job just ended: its final details
            # reach this Dispatcher as it closes. Answer with them rather than the error.
            with self._cond:
                self._cond.wait_for(
                    lambda: entry.final is not None or entry.runner is not runner,
                    timeout=_JOB_MASTER_GONE_WAIT_S,
                )
                version, final, now = entry.version, entry.final, entry.runner
            if final is not None:
                return dataclasses.replace(final, status_version=version)
            if now is not None and now is not runner:
                return self.job_details(job_id)  # another JobMaster took the job over
            raise
        live = JobDetailsInfo.from_proto(reply)
        if JobStatus[live.status].is_globally_terminal_state():
            # The JobMaster has ended the job but not yet reported it: what it reports (its
            # failure cause with the resume hint, its archived statistics) is what clients
            # must see as the job's end, so answer with that once it is here.
            with self._cond:
                self._cond.wait_for(lambda: entry.final is not None, _JOB_MASTER_GONE_WAIT_S)
                version, final = entry.version, entry.final
            if final is not None:
                return dataclasses.replace(final, status_version=version)
        return dataclasses.replace(live, status_version=version)

    def job_plan(self, job_id: str) -> tuple[str, dict[str, str]]:
        """The job's plan as Flink's REST API shows it (JSON) and its configuration."""
        graph = self._entry(job_id).graph
        return json.dumps(job_plan(graph)), dict(graph.config)

    def list_jobs(self, include_terminated: bool) -> list[JobDetailsInfo]:
        with self._cond:
            ids = list(self._jobs)
        result = []
        for job_id in ids:
            try:
                details = self.job_details(job_id)
            except WeirError:
                logger.warning("no details for job %s", job_id, exc_info=True)
                continue
            if include_terminated or not JobStatus[details.status].is_globally_terminal_state():
                result.append(details)
        return result

    def shut_down_cluster(self) -> None:
        """Ask the master process to stop, as a SIGTERM to it does; returns at once, the
        stop (jobs, TaskManagers, this Dispatcher) runs on the master's own thread."""
        if self._on_shutdown is None:
            msg = (
                "this cluster cannot be shut down remotely: it is embedded in a program "
                "and stops when the program does"
            )
            raise WeirError(msg)
        logger.info("Dispatcher at %s: shutdown of the cluster requested", self._address)
        self._on_shutdown()

    def cancel_job(self, job_id: str) -> None:
        entry = self._entry(job_id)
        if entry.final is not None or entry.runner is None:
            return
        with rpc.create_channel(entry.runner.address, self._security) as channel:
            stub = jobmaster_pb2_grpc.JobMasterStub(channel)
            rpc.call(
                "CancelJob", stub.CancelJob, common_pb2.JobIdRequest(job_id=job_id), timeout=10
            )

    def trigger_savepoint(
        self,
        job_id: str,
        target_directory: str | None = None,
        *,
        stop: bool = False,
        drain: bool = False,
    ) -> str:
        """Take a savepoint of a running job (``weir savepoint``; with ``stop``, ``weir
        stop``) and return its directory once it completed. The JobMaster's errors (not
        RUNNING, no savepoint directory, the savepoint failed) come back as they are; the
        job keeps running after each."""
        entry = self._entry(job_id)
        with self._cond:
            final, runner = entry.final, entry.runner
        if final is not None or runner is None:
            status = final.status if final is not None else JobStatus.INITIALIZING.name
            msg = (
                f"cannot take a savepoint of job {job_id}: it is {status}, and a savepoint "
                "is taken only while a job is RUNNING"
            )
            raise CheckpointError(msg)
        timeout_s = CheckpointingConfig.from_config({**self._config, **entry.graph.config})
        with rpc.create_channel(runner.address, self._security) as channel:
            stub = jobmaster_pb2_grpc.JobMasterStub(channel)
            reply = rpc.call(
                "TriggerSavepoint",
                stub.TriggerSavepoint,
                common_pb2.TriggerSavepointRequest(
                    job_id=job_id,
                    target_directory=target_directory or "",
                    stop=stop,
                    drain=drain,
                ),
                timeout=timeout_s.timeout_ms / 1000 + _SAVEPOINT_RPC_GRACE_S,
            )
        return str(reply.savepoint_path)

    def collect_source(self, job_id: str) -> tuple[str | None, JobDetailsInfo | None]:
        """Where a collect fetch goes: the address of the job's JobMaster (None while it
        starts, or once it is gone, with everything it had handed over) and the job's
        final details (None while it runs)."""
        entry = self._entry(job_id)
        with self._cond:
            return (entry.runner.address if entry.runner else None), entry.final

    def collect_drained(self, job_id: str, operator_id: str) -> None:
        """A collect sink of the job reported its end of data to the client; the JobMaster
        closes once every sink of the ended job did. May block (closing a JobMaster)."""
        entry = self._entry(job_id)
        with self._cond:
            entry.drained.add(operator_id)
            done = entry.final is not None and set(entry.collect_ids) <= entry.drained
        if done:
            self._close_runner(job_id)

    def list_task_managers(self) -> common_pb2.ListTaskManagersResponse:
        if not self._rm_address:
            return common_pb2.ListTaskManagersResponse()
        with rpc.create_channel(self._rm_address, self._security) as channel:
            stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
            return rpc.call(
                "ListTaskManagers", stub.ListTaskManagers, common_pb2.Empty(), timeout=10
            )

    def request_task_manager_file(
        self, request: common_pb2.TaskManagerFileRequest
    ) -> common_pb2.TaskManagerFileResponse:
        """Forwarded to the ResourceManager, which asks the TaskManager's TaskExecutor."""
        if not self._rm_address:
            msg = "no ResourceManager is known yet; ask again once the cluster has started"
            raise ServiceUnavailableError(msg)
        with rpc.create_channel(self._rm_address, self._security) as channel:
            stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
            return rpc.call(
                "RequestTaskManagerFile",
                stub.RequestTaskManagerFile,
                request,
                timeout=_FILE_REQUEST_TIMEOUT_S,
            )

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            # A JobMaster that is starting now is closed by its submission, which sees
            # _closed; wait for those so none outlives this call. Bounded: a JobMaster
            # starts in well under a second, and a hung one must not hang the shutdown.
            if not self._cond.wait_for(lambda: self._starting == 0, _STARTING_WAIT_S):
                logger.warning("%d JobMasters were still starting at close", self._starting)
            runners = [(jid, e.runner) for jid, e in self._jobs.items() if e.runner is not None]
            for entry in self._jobs.values():
                self._bump(entry)  # wake every result wait: the Dispatcher is going away
        for job_id, runner in runners:
            try:
                runner.close()
            except Exception:  # keep closing the others; the process is going down anyway
                logger.warning("closing the JobMaster of %s failed", job_id, exc_info=True)
            for listener in self._runner_closed_listeners:
                listener(runner.address)
        with self._cond:
            if not self._cond.wait_for(lambda: self._closing_runners == 0, _CLOSING_WAIT_S):
                logger.warning(
                    "%d JobMasters of ended jobs were still closing", self._closing_runners
                )
        self._election.stop()
        self._rm_retriever.stop()
