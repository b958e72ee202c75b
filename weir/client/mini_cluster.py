"""The embedded MiniCluster: the real Dispatcher, ResourceManager and JobMasters in this
process, TaskManagers leased from a Spark ``local[N]`` session. A composition root; the
wiring itself is ``ClusterComponents``, shared with the master process."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from weir.client.cluster_components import ClusterComponents
from weir.client.embedded_defaults import EMBEDDED_DEFAULTS
from weir.client.executor import RemoteExecutor
from weir.core import config as cfg
from weir.core.security import SecurityConfig

if TYPE_CHECKING:
    from weir.dispatcher.dispatcher import Dispatcher
    from weir.resourcemanager.resource_manager import ResourceManager

logger = logging.getLogger(__name__)


class MiniCluster:
    def __init__(self, config: Mapping[str, str] | None = None, spark_context: Any = None) -> None:
        self.config = cfg.validate({**EMBEDDED_DEFAULTS, **(config or {})})
        cfg.check_relations(self.config)
        # As Flink's local environment, the embedded cluster serves the REST API and the
        # dashboard only when asked to (rest.port set).
        self._components = ClusterComponents(
            self.config, spark_context, start_rest=cfg.REST_PORT.key in self.config
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
        return RemoteExecutor(
            self.address, attach_stdout=True, security=SecurityConfig.from_config(self.config)
        )

    def close(self, *, stop_spark: bool = True) -> None:
        """Stop the cluster. ``stop_spark=False`` (the end of an embedded run) leaves the
        SparkContext the cluster created to the interpreter's exit: nobody waits for it."""
        self._components.close(stop_spark=stop_spark)

    def __enter__(self) -> MiniCluster:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()
