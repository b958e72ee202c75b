"""The master's services wired together: a ResourceManager (the Spark driver), a
Dispatcher behind its gRPC server, and the factory that starts a JobMaster per job.

Both composition roots build on it: the embedded ``MiniCluster`` (Dispatcher on any free
port) and the master process of ``start-cluster.sh`` (Dispatcher on
``jobmanager.rpc.port``). It is the one place that knows the start order and the stop
order, as Flink's ``DispatcherResourceManagerComponent`` is.

Example::

    with ClusterComponents({"spark.master": "local[2]"}) as components:
        address = components.start(dispatcher_port=0)
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from weir.core import config as cfg
from weir.core import rpc, s3_settings
from weir.core.highavailability import (
    HighAvailabilityServices,
    LeaderContender,
    LeaderElectionService,
    StandaloneHaServices,
)
from weir.core.job_graph import JobGraph
from weir.core.job_info import JobDetailsInfo
from weir.core.security import Endpoint, SecurityConfig
from weir.dispatcher.dispatcher import Dispatcher
from weir.dispatcher.service import DispatcherServicer
from weir.jobmanager.job_master import JobMaster
from weir.queryablestate.client_proxy import KvStateClientProxy
from weir.resourcemanager.resource_manager import ResourceManager
from weir.resourcemanager.spark_launcher import (
    create_spark_context,
    prestart_driver_jvm,
    runs_in_application_master,
    stop_spark_context,
    warm_up_python_workers,
)
from weir.rest.job_manager_metrics import JobManagerMetrics

if TYPE_CHECKING:
    from pyspark import SparkContext

    from weir.rest.rest_server_endpoint import RestServerEndpoint

logger = logging.getLogger(__name__)

# Threads for the Dispatcher's calls that do work (submit, list, cancel, details); result
# waits and collect fetches wait as coroutines and hold none.
_DISPATCHER_WORKERS = 16
# In-flight calls (list, cancel, a result wait being answered) get this long to finish
# when the master stops; waits for job results are ended by Dispatcher.close() first.
_SERVER_STOP_GRACE_S = 1.0


def prestart_spark_driver(config: Mapping[str, str]) -> SparkContext | None:
    """A standby master's warm start; call before any gRPC server exists in the process.

    On a local master (``local[N]``: the executors are threads of this process's JVM),
    the SparkContext the master will lease from is created now and its Python workers'
    daemon started: the application holds nothing another could use. Returned, to be
    handed to ``ClusterComponents`` on winning (and stopped by the caller after).
    On a cluster manager an application would hold executors that the leader's needs:
    only the driver's JVM is started and warmed, without an application (see
    ``weir.resourcemanager.spark_launcher.prestart_driver_jvm``); returns None."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if runs_in_application_master():
        # A YARN ApplicationMaster's driver: its application is the session itself, and a
        # second SparkContext (a warm-up one) is not to be had there.
        return None
    if not cfg.get(config, cfg.SPARK_MASTER).startswith("local"):
        prestart_driver_jvm(config)
        return None
    spark = create_spark_context(config)
    try:
        warm_up_python_workers(spark)
    except BaseException:
        stop_spark_context(spark)
        raise
    return spark


class _PublishedAddress(LeaderContender):
    """The ResourceManager as a leader: found through its published address, its
    session handed to it so that it refuses slot calls of JobMasters of other sessions.
    Its TaskManagers need no fencing: they live and die with this leader's Spark
    application."""

    def __init__(
        self,
        name: str,
        address: str,
        on_session: Callable[[str | None], None],
        on_suspend: Callable[[bool], None],
    ) -> None:
        self._name = name
        self._address = address
        self._on_session = on_session
        self._on_suspend = on_suspend

    @property
    def address(self) -> str:
        return self._address

    def grant_leadership(self, fencing_token: str) -> None:
        logger.info("%s at %s is leader (session %s)", self._name, self._address, fencing_token[:8])
        self._on_session(fencing_token)

    def revoke_leadership(self) -> None:
        self._on_session(None)
        logger.info("%s at %s is no longer leader", self._name, self._address)

    def suspend_leadership(self, suspended: bool) -> None:
        self._on_suspend(suspended)


class ClusterComponents:
    """ResourceManager + Dispatcher + JobMaster factory; see the module docstring.

    ``config`` must already be validated (``weir.core.config.validate``).
    ``spark_context``: None lets the ResourceManager create one from the ``spark.*``
    keys and stop it on close; a given one is reused and never stopped. ``on_shutdown``:
    what a client's ``ShutDownCluster`` call does (the master process stops); None
    refuses it.
    """

    def __init__(
        self,
        config: Mapping[str, str],
        spark_context: SparkContext | None = None,
        ha_services: HighAvailabilityServices | None = None,
        *,
        start_rest: bool = True,
        on_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.config = dict(config)
        # Storage on s3:// (high availability, checkpoints, savepoints) with the cluster's
        # s3.* keys, as Flink's entry points initialise their file systems.
        s3_settings.configure(self.config)
        self._on_shutdown = on_shutdown
        self._spark_context = spark_context
        self.host = cfg.get(self.config, cfg.BIND_HOST)
        self.advertised_host = cfg.advertised_master_host(self.config)
        # Without high availability, leaders are found where this process put them.
        self._standalone = StandaloneHaServices() if ha_services is None else None
        self._ha: HighAvailabilityServices = ha_services or self._standalone  # type: ignore[assignment]
        self.resource_manager: ResourceManager | None = None
        self.dispatcher: Dispatcher | None = None
        self._server: rpc.AsyncioServer | None = None
        self._rm_election: LeaderElectionService | None = None
        self.address = ""
        self._start_rest = start_rest
        self.rest: RestServerEndpoint | None = None
        self.metrics: JobManagerMetrics | None = None
        self.kv_state_proxy: KvStateClientProxy | None = None

    def start(self, dispatcher_port: int = 0) -> str:
        """Start the ResourceManager, then the Dispatcher on ``bind-host:dispatcher_port``
        (0 = any free port); returns the Dispatcher's ``host:port``. On failure, whatever
        was started is closed again before the error propagates."""
        # Executors' Python workers must run this interpreter (it has Weir installed).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        try:
            # The ResourceManager creates the SparkContext: that must happen before any
            # gRPC server exists in this process (gRPC's fork handlers).
            self.resource_manager = ResourceManager(self.config, self._spark_context)
            rm_address = self.resource_manager.start(self.host, 0, advertise=self.advertised_host)
            if self._standalone is not None:
                self._standalone.resource_manager_address = rm_address
            # Published before the Dispatcher leads: the JobMasters of the jobs it recovers
            # find the ResourceManager through it.
            election = self._ha.get_resource_manager_leader_election()
            self._rm_election = election
            resource_manager = self.resource_manager
            election.start(
                _PublishedAddress(
                    "ResourceManager",
                    rm_address,
                    lambda token: resource_manager.set_leader_session(
                        token, election.confirm_leadership
                    ),
                    resource_manager.suspend_leadership,
                )
            )
            self.dispatcher = Dispatcher(
                self.config, self._ha, self._start_job_master, on_shutdown=self._on_shutdown
            )
            self._server = rpc.AsyncioServer(
                "weir-dispatcher",
                _DISPATCHER_WORKERS,
                security=SecurityConfig.from_config(self.config),
                endpoint=Endpoint.REST,
            )
            DispatcherServicer.register(self.dispatcher, self._server)
            self.address = self._server.bind(
                self.host,
                dispatcher_port,
                port_key=cfg.JOBMANAGER_PORT.key,
                advertise=self.advertised_host,
            )
            if self._standalone is not None:
                self._standalone.dispatcher_address = self.address
            self._server.start()
            self.dispatcher.start(self.address)
            if self._start_rest:
                self._start_rest_endpoint()
            self.metrics = JobManagerMetrics(self.address, self.config)
            self.metrics.start(self.host)
            if cfg.get(self.config, cfg.QUERYABLE_STATE_ENABLE):
                self.kv_state_proxy = KvStateClientProxy(
                    self.address, SecurityConfig.from_config(self.config)
                )
                self.kv_state_proxy.start(
                    self.host, cfg.get(self.config, cfg.QUERYABLE_STATE_PROXY_PORTS)
                )
        except BaseException:
            self.close()
            raise
        return self.address

    def _start_rest_endpoint(self) -> None:
        """Flink's REST API and the dashboard on rest.bind-address:rest.port, with TLS
        (security.ssl.rest.*) and the token (security.auth.token) where the cluster has
        them. Imported here: the web server is a fifth of an embedded cluster's start,
        and the embedded cluster serves REST only when asked to."""
        from weir.rest.cluster_view import ClusterView  # noqa: PLC0415
        from weir.rest.rest_server_endpoint import RestServerEndpoint  # noqa: PLC0415

        bind = cfg.get(self.config, cfg.REST_BIND_ADDRESS) or self.host
        security = SecurityConfig.from_config(self.config)
        self.rest = RestServerEndpoint(ClusterView(self.address, self.config), security)
        self.rest.start(
            bind,
            cfg.get(self.config, cfg.REST_PORT),
            advertised_host=cfg.get(self.config, cfg.REST_ADDRESS),
            ssl_context=security.rest_server_context(),
        )

    def _start_job_master(
        self,
        graph: JobGraph,
        on_terminated: Callable[[JobDetailsInfo], None],
        on_changed: Callable[[], None],
    ) -> JobMaster:
        job_master = JobMaster(
            graph,
            self.config,
            self._ha,
            on_terminated,
            self.host,
            advertised_host=self.advertised_host,
            on_changed=on_changed,
        )
        job_master.start()
        return job_master

    def close(self, *, stop_spark: bool = True) -> None:
        """Stop the Dispatcher (and with it every JobMaster), its server, then the
        ResourceManager, which stops its TaskManagers and the SparkContext it created
        (unless ``stop_spark`` is False: see ``ResourceManager.close``). Idempotent."""
        if self.kv_state_proxy is not None:
            self.kv_state_proxy.close()
            self.kv_state_proxy = None
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None
        if self.rest is not None:
            self.rest.close()
            self.rest = None
        if self.dispatcher is not None:
            self.dispatcher.close()
            self.dispatcher = None
        if self._rm_election is not None:
            self._rm_election.stop()
            self._rm_election = None
        if self._server is not None:
            self._server.stop(_SERVER_STOP_GRACE_S)
            self._server = None
        if self.resource_manager is not None:
            self.resource_manager.close(stop_spark=stop_spark)
            self.resource_manager = None

    def __enter__(self) -> ClusterComponents:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
