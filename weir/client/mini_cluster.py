"""The embedded MiniCluster: the real Dispatcher, ResourceManager and JobMasters in this
process, TaskManagers leased from a Spark ``local[N]`` session. A composition root; the
wiring itself is ``ClusterComponents``, shared with the master process."""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from weir.client.cluster_components import ClusterComponents
from weir.client.executor import RemoteExecutor
from weir.core import config as cfg

if TYPE_CHECKING:
    from weir.dispatcher.dispatcher import Dispatcher
    from weir.resourcemanager.resource_manager import ResourceManager

logger = logging.getLogger(__name__)

# Leases are made on demand, so a generous local[N] costs nothing until a job needs the
# TaskManagers; it lets jobs use more parallelism than the machine has cores, as Flink's
# MiniCluster does.
#
# The embedded driver lives as long as one program: its JVM stops at C1, the quick
# compiler (Spark's driver only schedules leases here; the records never pass through
# it), which shortens the start of a short run by a second or more.
_EMBEDDED_DEFAULTS = {
    "spark.master": "local[16]",
    "spark.ui.enabled": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
    # Nothing to clean up in a driver that lives for one program and is not stopped but
    # left to end with it: no cleaner thread to complain as the JVM goes down.
    "spark.cleaner.referenceTracking": "false",
}


class MiniCluster:
    def __init__(self, config: Mapping[str, str] | None = None, spark_session: Any = None) -> None:
        self.config = cfg.validate({**_EMBEDDED_DEFAULTS, **(config or {})})
        cfg.check_relations(self.config)
        # As Flink's local environment, the embedded cluster serves the REST API and the
        # dashboard only when asked to (rest.port set).
        self._components = ClusterComponents(
            self.config, spark_session, start_rest=cfg.REST_PORT.key in self.config
        )
        self.address = ""

    @property
    def resource_manager(self) -> ResourceManager | None:
        return self._components.resource_manager

    @property
    def rest_url(self) -> str:
        """The REST endpoint's URL (``http://host:port``); empty when it is not served."""
        rest = self._components.rest
        return rest.url if rest is not None else ""

    @property
    def prometheus_address(self) -> str:
        """The master's Prometheus endpoint (``host:port``); empty when not configured."""
        metrics = self._components.metrics
        return metrics.prometheus_address if metrics is not None else ""

    @property
    def queryable_state_proxy_address(self) -> str:
        """The queryable state proxy's ``host:port``; empty unless queryable-state.enable."""
        proxy = self._components.kv_state_proxy
        return proxy.address if proxy is not None else ""

    @property
    def dispatcher(self) -> Dispatcher | None:
        return self._components.dispatcher

    def start(self) -> MiniCluster:
        self.address = self._components.start(dispatcher_port=0)
        logger.info("MiniCluster started: Dispatcher at %s", self.address)
        return self

    def executor(self) -> RemoteExecutor:
        return RemoteExecutor(self.address, attach_stdout=True)

    def close(self, *, stop_spark: bool = True) -> None:
        """Stop the cluster. ``stop_spark=False`` (the end of an embedded run) leaves the
        SparkSession the cluster created to the interpreter's exit: nobody waits for it."""
        self._components.close(stop_spark=stop_spark)

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
            _shared.close(stop_spark=False)
            _shared = None
