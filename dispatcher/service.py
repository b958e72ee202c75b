"""The Dispatcher's gRPC face, on an ``AsyncioServer``: its methods are coroutines.

A result wait (WaitForJobResult) or a collect fetch waits as a coroutine on the server's
loop, never as a thread, so any number of attached clients wait at once while the calls
that do work (submit, list, cancel) run on the server's worker pool.
"""

from __future__ import annotations

import asyncio
import contextlib

import grpc

from weir.core import rpc
from weir.core.checkpoint.checkpoint_stats_codec import encode_checkpoint_stats
from weir.core.errors import ConfigurationError, JobNotFoundError, QueryableStateError, WeirError
from weir.core.ids import parse_job_id
from weir.core.job_status import JobStatus
from weir.core.rpc import translate_server_errors
from weir.dispatcher.dispatcher import Dispatcher
from weir.proto import (
    common_pb2,
    dispatcher_pb2,
    dispatcher_pb2_grpc,
    jobmaster_pb2_grpc,
)

# A waiting call answers at least this often, with the current state, and the client
# asks again: a client that went away frees its waiter soon, and no call outlives a
# proxy's idle timeout.
MAX_WAIT_MS = 30_000
# A collect fetch forwarded to a JobMaster gets this long beyond its own wait to answer:
# the answer is a few batches from memory, so 10 s only passes when the JobMaster is
# gone, and it is still well inside the client's own deadline (its wait plus 30 s).
_FETCH_RPC_GRACE_S = 10.0


class DispatcherServicer(dispatcher_pb2_grpc.DispatcherServicer):
    def __init__(self, dispatcher: Dispatcher, server: rpc.AsyncioServer) -> None:
        self._dispatcher = dispatcher
        self._server = server
        # JobMaster address -> channel for forwarded collect fetches; only touched on the
        # server's loop. Closed when that JobMaster is closed.
        self._jobmasters: dict[str, grpc.aio.Channel] = {}
        self._closing: set[asyncio.Task[None]] = set()
        dispatcher.on_runner_closed(
            lambda address: server.call_soon(lambda: self._forget_jobmaster(address))
        )

    @classmethod
    def register(cls, dispatcher: Dispatcher, server: rpc.AsyncioServer) -> None:
        dispatcher_pb2_grpc.add_DispatcherServicer_to_server(cls(dispatcher, server), server.server)

    @translate_server_errors
    async def SubmitJob(self, request, context):
        job_id = await self._server.run_blocking(self._dispatcher.submit_job, request.job_graph)
        return dispatcher_pb2.SubmitJobResponse(job_id=job_id)

    @translate_server_errors
    async def ListJobs(self, request, context):
        jobs = await self._server.run_blocking(
            self._dispatcher.list_jobs, request.include_terminated
        )
        return dispatcher_pb2.ListJobsResponse(jobs=[j.to_proto() for j in jobs])

    @translate_server_errors
    async def GetJobDetails(self, request, context):
        details = await self._server.run_blocking(
            self._dispatcher.job_details, parse_job_id(request.job_id)
        )
        return details.to_proto()

    @translate_server_errors
    async def GetCheckpointStatistics(self, request, context):
        stats = await self._server.run_blocking(
            self._dispatcher.checkpoint_statistics, parse_job_id(request.job_id)
        )
        return encode_checkpoint_stats(stats, request.job_id)

    @translate_server_errors
    async def GetJobPlan(self, request, context):
        plan, config = await self._server.run_blocking(
            self._dispatcher.job_plan, parse_job_id(request.job_id)
        )
        return dispatcher_pb2.JobPlanResponse(plan_json=plan, config=config)

    @translate_server_errors
    async def CancelJob(self, request, context):
        await self._server.run_blocking(self._dispatcher.cancel_job, parse_job_id(request.job_id))
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    async def TriggerSavepoint(self, request, context):
        if request.drain and not request.stop:
            msg = "--drain only goes with stop (weir stop --drain --savepointPath DIR JOB_ID)"
            raise ConfigurationError(msg)
        path = await self._server.run_blocking(
            lambda: self._dispatcher.trigger_savepoint(
                parse_job_id(request.job_id),
                request.target_directory or None,
                stop=request.stop,
                drain=request.drain,
            )
        )
        return common_pb2.TriggerSavepointResponse(savepoint_path=path)

    @translate_server_errors
    async def WaitForJobResult(self, request, context):
        timeout_ms = min(max(request.timeout_ms, 0), MAX_WAIT_MS)
        changed = asyncio.Event()
        job_id = parse_job_id(request.job_id)
        watch = self._dispatcher.watch(job_id, lambda: self._server.call_soon(changed.set))
        try:
            # known_version 0 (a caller that knows none): wait for the end of the job only.
            if not watch.terminal and request.known_version in (0, watch.version):
                # Nothing new for this caller: wait for a change, as a coroutine.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), timeout_ms / 1000)
        finally:
            self._dispatcher.unwatch(job_id, watch.token)
        details = await self._server.run_blocking(self._dispatcher.job_details, job_id)
        return details.to_proto()

    @translate_server_errors
    async def FetchCollectBatches(self, request, context):
        timeout_ms = min(max(request.timeout_ms, 0), MAX_WAIT_MS)
        address, final = self._dispatcher.collect_source(parse_job_id(request.job_id))
        if address is None:  # starting, or gone with everything it had handed over
            status = final.status if final else JobStatus.INITIALIZING.name
            return common_pb2.FetchCollectResponse(end_of_data=final is not None, job_status=status)
        stub = jobmaster_pb2_grpc.JobMasterStub(self._jobmaster_channel(address))
        try:
            reply = await rpc.call_async(
                "JobMaster.FetchCollectBatches",
                stub.FetchCollectBatches,
                common_pb2.FetchCollectRequest(
                    job_id=request.job_id,
                    operator_id=request.operator_id,
                    max_batches=request.max_batches or 16,
                    timeout_ms=timeout_ms,
                ),
                timeout=timeout_ms / 1000 + _FETCH_RPC_GRACE_S,
            )
        except WeirError:
            self._forget_jobmaster(address)
            raise
        if reply.end_of_data:
            await self._server.run_blocking(
                self._dispatcher.collect_drained, request.job_id, request.operator_id
            )
        return reply

    @translate_server_errors
    async def RequestKvStateLocation(self, request, context):
        job_id = parse_job_id(request.job_id)
        address, final = self._dispatcher.collect_source(job_id)
        if address is None or final is not None:
            status = final.status if final else JobStatus.INITIALIZING.name
            msg = f"job {job_id} is {status}: only a running job's state can be queried"
            raise JobNotFoundError(msg)
        stub = jobmaster_pb2_grpc.JobMasterStub(self._jobmaster_channel(address))
        try:
            return await rpc.call_async(
                "JobMaster.RequestKvStateLocation",
                stub.RequestKvStateLocation,
                request,
                timeout=_FETCH_RPC_GRACE_S,
            )
        except WeirError as exc:
            if not isinstance(exc, QueryableStateError):
                self._forget_jobmaster(address)
            raise

    def _jobmaster_channel(self, address: str) -> grpc.aio.Channel:
        channel = self._jobmasters.get(address)
        if channel is None:
            channel = rpc.create_aio_channel(address, self._server.security)
            self._jobmasters[address] = channel
        return channel

    def _forget_jobmaster(self, address: str) -> None:
        channel = self._jobmasters.pop(address, None)
        if channel is not None:
            task = asyncio.get_running_loop().create_task(channel.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    @translate_server_errors
    async def ShutDownCluster(self, request, context):
        await self._server.run_blocking(self._dispatcher.shut_down_cluster)
        return common_pb2.Ack(ok=True)

    @translate_server_errors
    async def ListTaskManagers(self, request, context):
        return await self._server.run_blocking(self._dispatcher.list_task_managers)

    @translate_server_errors
    async def RequestTaskManagerFile(self, request, context):
        return await self._server.run_blocking(self._dispatcher.request_task_manager_file, request)

    @translate_server_errors
    async def ClusterOverview(self, request, context):
        jobs = await self._server.run_blocking(self._dispatcher.list_jobs, True)
        reply = await self._server.run_blocking(self._dispatcher.list_task_managers)
        tms = reply.task_managers
        count = {s: sum(1 for j in jobs if j.status == s.name) for s in JobStatus}
        ended = sum(count[s] for s in JobStatus if s.is_globally_terminal_state())
        return dispatcher_pb2.ClusterOverviewResponse(
            task_managers=len(tms),
            slots_total=sum(t.num_slots for t in tms),
            slots_available=sum(t.free_slots for t in tms),
            jobs_running=len(jobs) - ended,
            jobs_finished=count[JobStatus.FINISHED],
            jobs_cancelled=count[JobStatus.CANCELED],
            jobs_failed=count[JobStatus.FAILED],
        )
