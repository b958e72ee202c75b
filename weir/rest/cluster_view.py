"""What the REST handlers read, over gRPC only: the Dispatcher (jobs, plans, checkpoint
statistics, TaskManagers) and each TaskExecutor's metrics (through ``MetricFetcher``, as
Flink's asks every TaskManager's MetricQueryService).

Blocking calls: the endpoint runs them on its worker threads, never on its event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass

import grpc

from weir.client.dispatcher_client import DispatcherGateway
from weir.core import config as cfg
from weir.core import rpc
from weir.core.errors import RemoteError
from weir.core.metrics import MetricSample
from weir.core.metrics.metric_codec import decode_metrics
from weir.core.security import SecurityConfig
from weir.proto import common_pb2, taskexecutor_pb2_grpc
from weir.rest.metric_fetcher import MetricFetcher, TaskManagerMetrics
from weir.rest.savepoint_trigger import DispatcherSavepointTrigger, SavepointTrigger
from weir.rest.uploaded_job_files import UploadedJobFiles

__all__ = ["ClusterView", "TaskManagerMetricsView", "TaskMetrics"]

logger = logging.getLogger(__name__)

# How long a REST call waits, in all, for the TaskManagers that answered their last fetch:
# one answers GetMetrics in milliseconds, a busy one (its tasks hold the GIL) in tenths of
# a second. What has not arrived by then is served from its last values, marked stale.
_METRICS_WAIT_S = 1.0


@dataclass(frozen=True, slots=True)
class TaskManagerMetricsView:
    info: common_pb2.TaskManagerInfo
    samples: tuple[MetricSample, ...] = ()
    prometheus_address: str = ""
    stale: bool = False
    """The TaskManager did not answer its last fetch: ``samples`` are the last it sent."""


class TaskMetrics(dict[str, dict[str, float]]):
    """Task metrics by execution attempt id: ``{attempt: {name: value}}``."""

    def __init__(
        self, values: Mapping[str, dict[str, float]], stale: frozenset[str] = frozenset()
    ) -> None:
        super().__init__(values)
        self.stale = stale
        """The attempts whose values are the last their TaskManager sent before it stopped
        answering."""


class ClusterView:
    """A context manager; ``close`` closes its channels."""

    def __init__(
        self,
        dispatcher_address: str,
        config: Mapping[str, str],
        savepoints: SavepointTrigger | None = None,
    ) -> None:
        self._security = SecurityConfig.from_config(config)
        self.dispatcher = DispatcherGateway(dispatcher_address, security=self._security)
        self.config = dict(config)
        self.savepoints: SavepointTrigger = savepoints or DispatcherSavepointTrigger(
            self.dispatcher
        )
        self.uploads = UploadedJobFiles(cfg.get(self.config, cfg.WEB_UPLOAD_DIR))
        self._lock = threading.Lock()
        self._channels: dict[str, grpc.Channel] = {}
        # A fetch holds no thread, and one TaskManager has one outstanding at most: it may
        # wait as long as the TaskManager may be silent before it is declared lost, when it
        # leaves the list and its channel is closed, which ends the fetch.
        self._fetch_deadline_s = cfg.get(self.config, cfg.HEARTBEAT_TIMEOUT) / 1000
        self._metrics = MetricFetcher[common_pb2.TaskManagerInfo](
            self._request_metrics,
            update_interval_s=cfg.get(self.config, cfg.METRIC_FETCHER_UPDATE_INTERVAL) / 1000,
            wait_s=_METRICS_WAIT_S,
        )

    def task_managers(self) -> dict[str, TaskManagerMetricsView]:
        """Every registered TaskManager by resource id, with its metrics (see
        ``MetricFetcher``). The list is asked for every time: a TaskManager that just
        registered is never missing."""
        infos = self.dispatcher.list_task_managers()
        fetched = self._metrics.metrics(infos)
        views: dict[str, TaskManagerMetricsView] = {}
        for info in infos:
            found = fetched[info.resource_id]
            last = found.metrics or TaskManagerMetrics()
            views[info.resource_id] = TaskManagerMetricsView(
                info, last.samples, last.prometheus_address, found.stale
            )
        with self._lock:
            for address in set(self._channels) - {i.rpc_address for i in infos}:
                self._channels.pop(address).close()
        return views

    def _request_metrics(self, info: common_pb2.TaskManagerInfo) -> Future[TaskManagerMetrics]:
        """Start a GetMetrics call on ``info``'s TaskManager; its answer arrives on gRPC's
        thread, decoded, in the returned future."""
        with self._lock:
            channel = self._channels.get(info.rpc_address)
            if channel is None:
                channel = rpc.create_channel(info.rpc_address, self._security)
                self._channels[info.rpc_address] = channel
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        what = f"GetMetrics on TaskManager {info.resource_id}"
        result: Future[TaskManagerMetrics] = Future()

        def landed(call: grpc.Future) -> None:
            try:
                dump = call.result()
                metrics = TaskManagerMetrics(tuple(decode_metrics(dump)), dump.prometheus_address)
            except grpc.RpcError as exc:
                result.set_exception(rpc.map_rpc_error(exc, what))
            except grpc.FutureCancelledError:
                result.set_exception(RemoteError(f"{what} was cancelled: it left the list"))
            except Exception as exc:  # a dump we cannot decode: this fetch fails, not the call
                result.set_exception(exc)
            else:
                result.set_result(metrics)

        stub.GetMetrics.future(
            common_pb2.Empty(), timeout=self._fetch_deadline_s
        ).add_done_callback(landed)
        return result

    def task_metrics(self) -> TaskMetrics:
        """Task metrics by execution attempt id, and which of them are stale."""
        result: dict[str, dict[str, float]] = {}
        stale: set[str] = set()
        for view in self.task_managers().values():
            for sample in view.samples:
                scope = sample.scope
                if scope[:3] != ("taskmanager", "job", "task"):
                    continue
                attempt = sample.variables.get("task_attempt_id", "")
                if view.stale:
                    stale.add(attempt)
                name = sample.name
                if len(scope) > 3:  # an operator's (and its users') metrics, as Flink names
                    # them: <operator name>.<user groups>.<metric>
                    groups = [sample.variables.get("operator_name", ""), *scope[4:], name]
                    name = ".".join(groups)
                result.setdefault(attempt, {})[name] = sample.value
        return TaskMetrics(result, frozenset(stale))

    def close(self) -> None:
        with self._lock:
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            channel.close()
        self.dispatcher.close()
        self.uploads.close()

    def __enter__(self) -> ClusterView:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
