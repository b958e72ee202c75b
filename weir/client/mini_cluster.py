"""The embedded MiniCluster: the real Dispatcher, ResourceManager and JobMasters in this
process, TaskManagers leased from a Spark ``local[N]`` session. A composition root."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any

from dispatcher.dispatcher import Dispatcher
from dispatcher.service import DispatcherServicer
from jobmanager.job_master import JobMaster
from resourcemanager.resource_manager import ResourceManager
from weir.client.executor import RemoteExecutor
from weir.core import config as cfg
from weir.core import rpc
from weir.core.highavailability import StandaloneHaServices
from weir.core.job_graph import JobGraph
from weir.core.job_info import JobDetailsInfo

logger = logging.getLogger(__name__)

# Leases are made on demand, so a generous local[N] costs nothing until a job needs the
# TaskManagers; it lets jobs use more parallelism than the machine has cores, as Flink's
# MiniCluster does.
_EMBEDDED_DEFAULTS = {
    "spark.master": "local[16]",
    "spark.ui.enabled": "false",
}


class MiniCluster:
    def __init__(self, config: Mapping[str, str] | None = None, spark_session: Any = None) -> None:
        self.config = cfg.validate({**_EMBEDDED_DEFAULTS, **(config or {})})
        self._spark_session = spark_session
        self._host = cfg.get(self.config, cfg.BIND_HOST)
        self._ha = StandaloneHaServices()
        self.resource_manager: ResourceManager | None = None
        self.dispatcher: Dispatcher | None = None
        self._server: Any = None
        self.address = ""

    def start(self) -> MiniCluster:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # The ResourceManager creates the SparkSession: that must happen before any gRPC
        # server exists in this process (gRPC's fork handlers).
        self.resource_manager = ResourceManager(self.config, self._spark_session)
        self._ha.resource_manager_address = self.resource_manager.start(self._host, 0)
        self.dispatcher = Dispatcher(self.config, self._ha, self._start_job_master)
        self._server = rpc.create_server(max_workers=32)
        DispatcherServicer.register(self.dispatcher, self._server)
        self.address = rpc.bind(self._server, self._host, 0)
        self._ha.dispatcher_address = self.address
        self._server.start()
        self.dispatcher.start(self.address)
        logger.info("MiniCluster started: Dispatcher at %s", self.address)
        return self

    def _start_job_master(
        self, graph: JobGraph, on_terminated: Callable[[JobDetailsInfo], None]
    ) -> JobMaster:
        job_master = JobMaster(graph, self.config, self._ha, on_terminated, self._host)
        job_master.start()
        return job_master

    def executor(self) -> RemoteExecutor:
        return RemoteExecutor(self.address, attach_stdout=True)

    def close(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.close()
            self.dispatcher = None
        if self._server is not None:
            self._server.stop(grace=1.0).wait()
            self._server = None
        if self.resource_manager is not None:
            self.resource_manager.close()
            self.resource_manager = None

    def __enter__(self) -> MiniCluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()


_shared: MiniCluster | None = None
_shared_lock = threading.Lock()


def shared_mini_cluster_executor() -> RemoteExecutor:
    """The executor of this process's embedded MiniCluster, started on first use and
    stopped when the interpreter exits."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MiniCluster().start()
            atexit.register(_close_shared)
        return _shared.executor()


def _close_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close()
            _shared = None
