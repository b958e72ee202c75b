"""What the REST handlers read, over gRPC only: the Dispatcher (jobs, plans, checkpoint
statistics, TaskManagers) and each TaskExecutor's metrics (Flink's MetricFetcher, which
asks every TaskManager's MetricQueryService).

Blocking calls: the endpoint runs them on its worker threads, never on its event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import grpc

from weir.client.dispatcher_client import DispatcherGateway
from weir.core import config as cfg
from weir.core import rpc
from weir.core.errors import WeirError
from weir.core.metrics import MetricSample
from weir.core.metrics.metric_codec import decode_metrics
from weir.core.security import SecurityConfig
from weir.proto import common_pb2, taskexecutor_pb2_grpc
from weir.rest.savepoint_trigger import DispatcherSavepointTrigger, SavepointTrigger
from weir.rest.uploaded_job_files import UploadedJobFiles

__all__ = ["ClusterView", "TaskManagerMetricsView"]

logger = logging.getLogger(__name__)

# Metrics fetched from the TaskManagers are reused for this long: a dashboard polling
# every second and a REST client asking for several vertices share one fetch per
# TaskManager. Flink's metrics.fetcher.update-interval is 10 s; ours is short because the
# rates it serves are already averaged over seconds on the TaskManager.
_METRICS_MAX_AGE_S = 1.0
# A TaskManager that does not answer within this is left out of one answer (its metrics
# read as missing) rather than holding the whole REST call.
_METRICS_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class TaskManagerMetricsView:
    info: common_pb2.TaskManagerInfo
    samples: tuple[MetricSample, ...] = ()
    prometheus_address: str = ""


@dataclass(slots=True)
class _Cache:
    fetched_at: float = -1e9
    views: dict[str, TaskManagerMetricsView] = field(default_factory=dict)


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
        self._cache = _Cache()

    def task_managers(self, *, fresh: bool = False) -> dict[str, TaskManagerMetricsView]:
        """Every registered TaskManager by resource id, with its current metrics. The list
        is asked for every time (a TaskManager that just registered is never missing);
        only metrics younger than ``_METRICS_MAX_AGE_S`` are reused."""
        infos = self.dispatcher.list_task_managers()
        with self._lock:
            cache = self._cache
        reuse = not fresh and time.monotonic() - cache.fetched_at < _METRICS_MAX_AGE_S
        views: dict[str, TaskManagerMetricsView] = {}
        fetched: dict[str, TaskManagerMetricsView] = {}
        for info in infos:
            cached = cache.views.get(info.resource_id)
            if reuse and cached is not None:
                views[info.resource_id] = TaskManagerMetricsView(
                    info, cached.samples, cached.prometheus_address
                )
            else:
                views[info.resource_id] = fetched[info.resource_id] = self._fetch(info, cached)
        with self._lock:
            if not reuse:
                self._cache = _Cache(time.monotonic(), dict(views))
            elif fetched and self._cache is cache:
                cache.views.update(fetched)
            for address in set(self._channels) - {i.rpc_address for i in infos}:
                self._channels.pop(address).close()
        return views

    def _fetch(
        self, info: common_pb2.TaskManagerInfo, previous: TaskManagerMetricsView | None
    ) -> TaskManagerMetricsView:
        """The TaskManager's metrics now; when it does not answer in time, the values of
        the last fetch that worked (Flink's MetricStore keeps them the same way), so a
        loaded TaskManager's metrics read as slightly old rather than as zero."""
        with self._lock:
            channel = self._channels.get(info.rpc_address)
            if channel is None:
                channel = rpc.create_channel(info.rpc_address, self._security)
                self._channels[info.rpc_address] = channel
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        try:
            dump = rpc.call(
                f"GetMetrics on TaskManager {info.resource_id}",
                stub.GetMetrics,
                common_pb2.Empty(),
                timeout=_METRICS_TIMEOUT_S,
            )
        except WeirError:
            # A TaskManager going away while we ask: its metrics are missing from this
            # answer, and the heartbeat monitor deals with it.
            logger.warning("no metrics from TaskManager %s", info.resource_id, exc_info=True)
            if previous is None:
                return TaskManagerMetricsView(info)
            return TaskManagerMetricsView(info, previous.samples, previous.prometheus_address)
        return TaskManagerMetricsView(info, tuple(decode_metrics(dump)), dump.prometheus_address)

    def task_metrics(self) -> dict[str, dict[str, float]]:
        """Task metrics by execution attempt id: ``{attempt: {name: value}}``."""
        result: dict[str, dict[str, float]] = {}
        for view in self.task_managers().values():
            for sample in view.samples:
                scope = sample.scope
                if scope[:3] != ("taskmanager", "job", "task"):
                    continue
                attempt = sample.variables.get("task_attempt_id", "")
                name = sample.name
                if len(scope) > 3:  # an operator's (and its users') metrics, as Flink names
                    # them: <operator name>.<user groups>.<metric>
                    groups = [sample.variables.get("operator_name", ""), *scope[4:], name]
                    name = ".".join(groups)
                result.setdefault(attempt, {})[name] = sample.value
        return result

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
