"""The Dispatcher: accepts JobGraphs, starts a JobMaster per job, answers for all jobs.

It never imports a JobMaster: the composition root hands it a factory, and it talks to
each JobMaster through that JobMaster's gRPC endpoint.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from weir.core import rpc
from weir.core.checkpoint import CheckpointStatsSnapshot
from weir.core.checkpoint.checkpoint_stats_codec import decode_checkpoint_stats
from weir.core.errors import JobNotFoundError, JobSubmissionError, WeirError
from weir.core.highavailability import HighAvailabilityServices, LeaderContender
from weir.core.ids import parse_job_id
from weir.core.job_graph import JobGraph, OperatorKind
from weir.core.job_graph_codec import decode_job_graph
from weir.core.job_info import JobDetailsInfo
from weir.core.job_status import JobStatus
from weir.proto import common_pb2, jobmaster_pb2_grpc, resourcemanager_pb2_grpc

logger = logging.getLogger(__name__)

# Finished jobs kept for `weir list -a` and result queries (Flink's jobstore.max-capacity).
MAX_ARCHIVED_JOBS = 1000


class JobManagerRunner(Protocol):
    """What the factory returns: a started JobMaster reachable over gRPC."""

    @property
    def address(self) -> str: ...

    def close(self) -> None: ...


JobMasterFactory = Callable[[JobGraph, Callable[[JobDetailsInfo], None]], JobManagerRunner]
"""Starts a JobMaster for the graph; the callback receives the final details once the
job is globally terminal."""


@dataclass
class _Job:
    graph: JobGraph
    runner: JobManagerRunner | None
    submitted_ms: int
    collect_ids: tuple[str, ...]
    final: JobDetailsInfo | None = None
    drained: set[str] = field(default_factory=set)
    final_checkpoints: CheckpointStatsSnapshot | None = None


class Dispatcher(LeaderContender):
    def __init__(
        self,
        config: Mapping[str, str],
        ha_services: HighAvailabilityServices,
        job_master_factory: JobMasterFactory,
        address: str = "",
    ) -> None:
        self._config = dict(config)
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

    @property
    def address(self) -> str:
        return self._address

    def start(self, address: str) -> None:
        self._address = address
        self._rm_retriever.start(self._on_resource_manager)
        self._election.start(self)

    def grant_leadership(self, fencing_token: str) -> None:
        self._leader_token = fencing_token
        logger.info("Dispatcher at %s is leader", self._address)

    def revoke_leadership(self) -> None:
        self._leader_token = None

    def _on_resource_manager(self, address: str | None, _token: str | None) -> None:
        self._rm_address = address

    # -- jobs ----------------------------------------------------------------------
    def submit_job(self, job_graph_bytes: bytes) -> str:
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
        self._job_graph_store.put_job_graph(graph.job_id, job_graph_bytes)
        logger.info("received job %s (%s)", graph.job_name, graph.job_id)
        try:
            entry.runner = self._factory(graph, self._job_terminated)
        except Exception as exc:
            with self._cond:
                self._jobs.pop(graph.job_id, None)
            self._job_graph_store.remove_job_graph(graph.job_id)
            logger.warning("starting the JobMaster of %s failed", graph.job_id, exc_info=True)
            msg = f"could not start a JobMaster for job {graph.job_id}: {exc}"
            raise JobSubmissionError(msg) from exc
        return graph.job_id

    def _job_terminated(self, details: JobDetailsInfo) -> None:
        # Archive the last checkpoint statistics while the JobMaster still serves.
        final_checkpoints = self._archive_checkpoint_statistics(details.job_id)
        with self._cond:
            entry = self._jobs.get(details.job_id)
            if entry is None:
                return
            entry.final_checkpoints = final_checkpoints
            entry.final = details
            self._cond.notify_all()
            close_now = not entry.collect_ids
        logger.info("job %s reached %s", details.job_id, details.status)
        self._job_graph_store.remove_job_graph(details.job_id)  # type: ignore[arg-type]
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
        except WeirError:
            # The job's result matters more than its statistics: archive it without them.
            logger.warning(
                "job %s: could not archive its checkpoint statistics", job_id, exc_info=True
            )
            return None

    @staticmethod
    def _fetch_checkpoint_statistics(address: str, job_id: str) -> CheckpointStatsSnapshot:
        with rpc.create_channel(address) as channel:
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
            runner.close()

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
        entry = self._entry(job_id)
        if entry.final is not None:
            return entry.final
        runner = entry.runner
        if runner is None:
            return JobDetailsInfo(
                job_id, entry.graph.job_name, JobStatus.INITIALIZING.name, entry.submitted_ms
            )
        with rpc.create_channel(runner.address) as channel:
            stub = jobmaster_pb2_grpc.JobMasterStub(channel)
            reply = rpc.call(
                "GetJobDetails",
                stub.GetJobDetails,
                common_pb2.JobIdRequest(job_id=job_id),
                timeout=10,
            )
        return JobDetailsInfo.from_proto(reply)

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

    def cancel_job(self, job_id: str) -> None:
        entry = self._entry(job_id)
        if entry.final is not None or entry.runner is None:
            return
        with rpc.create_channel(entry.runner.address) as channel:
            stub = jobmaster_pb2_grpc.JobMasterStub(channel)
            rpc.call(
                "CancelJob", stub.CancelJob, common_pb2.JobIdRequest(job_id=job_id), timeout=10
            )

    def wait_for_result(self, job_id: str, timeout: float) -> JobDetailsInfo:
        entry = self._entry(job_id)
        with self._cond:
            self._cond.wait_for(lambda: entry.final is not None or self._closed, timeout)
        return entry.final if entry.final is not None else self.job_details(job_id)

    def fetch_collect(
        self, job_id: str, operator_id: str, max_batches: int, timeout_ms: int
    ) -> common_pb2.FetchCollectResponse:
        entry = self._entry(job_id)
        runner = entry.runner
        if runner is None:  # the JobMaster is gone: everything it had was handed over
            status = entry.final.status if entry.final else JobStatus.INITIALIZING.name
            return common_pb2.FetchCollectResponse(
                end_of_data=entry.final is not None, job_status=status
            )
        with rpc.create_channel(runner.address) as channel:
            stub = jobmaster_pb2_grpc.JobMasterStub(channel)
            reply = rpc.call(
                "FetchCollectBatches",
                stub.FetchCollectBatches,
                common_pb2.FetchCollectRequest(
                    job_id=job_id,
                    operator_id=operator_id,
                    max_batches=max_batches,
                    timeout_ms=timeout_ms,
                ),
                timeout=timeout_ms / 1000 + 10,
            )
        if reply.end_of_data:
            with self._cond:
                entry.drained.add(operator_id)
                done = entry.final is not None and set(entry.collect_ids) <= entry.drained
            if done:
                self._close_runner(job_id)
        return reply

    def list_task_managers(self) -> common_pb2.ListTaskManagersResponse:
        if not self._rm_address:
            return common_pb2.ListTaskManagersResponse()
        with rpc.create_channel(self._rm_address) as channel:
            stub = resourcemanager_pb2_grpc.ResourceManagerStub(channel)
            return rpc.call(
                "ListTaskManagers", stub.ListTaskManagers, common_pb2.Empty(), timeout=10
            )

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            runners = [(jid, e.runner) for jid, e in self._jobs.items() if e.runner is not None]
            self._cond.notify_all()
        for job_id, runner in runners:
            try:
                runner.close()
            except Exception:  # keep closing the others; the process is going down anyway
                logger.warning("closing the JobMaster of %s failed", job_id, exc_info=True)
        self._election.stop()
        self._rm_retriever.stop()
