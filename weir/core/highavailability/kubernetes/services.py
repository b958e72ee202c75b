"""``high-availability.type: kubernetes``: the HighAvailabilityServices of a master process
(and the retrieval side of clients) on the Kubernetes API, without ZooKeeper, as Flink's
``KubernetesLeaderElectionHaServices``: one ConfigMap per cluster,
``<kubernetes.cluster-id>-cluster-config-map`` in ``kubernetes.namespace``, holds the lease
of the masters' election, the leaders' addresses and the pointers a new leader recovers
jobs from (``stores``); job graphs and the checkpoints of the JobMasters' memory are files
in ``high-availability.storageDir``.

The ConfigMap carries the labels ``app: <cluster id>``, ``configmap-type:
high-availability`` and ``type: weir-native-kubernetes``, and no owner: like Flink's, it
outlives the cluster's Deployment, so that a cluster started again under the same id
recovers its jobs. ``kubectl delete configmap -l app=<id>,configmap-type=high-availability``
removes it for good.

Example (a master)::

    services = KubernetesHaServices(config, identifier="10.0.0.7:6123")
    services.start_contending()
    token = services.latch.await_leadership()   # a standby waits here
    ...                                          # start the components with `services`
    services.close()
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping

from weir.core import config as cfg
from weir.core.errors import ConfigurationError, LeaderLostError
from weir.core.highavailability.kubernetes.api_client import (
    KubernetesApiClient,
    KubernetesApiError,
    KubernetesForbiddenError,
)
from weir.core.highavailability.kubernetes.config_map_watcher import ConfigMapWatcher
from weir.core.highavailability.kubernetes.connection import resolve_connection
from weir.core.highavailability.kubernetes.leader_election import (
    KubernetesLeaderElectionDriver,
    KubernetesLeaderRetrievalService,
)
from weir.core.highavailability.kubernetes.leader_elector import (
    ConfigMapRef,
    KubernetesLeaderElector,
)
from weir.core.highavailability.kubernetes.stores import (
    KubernetesCheckpointIdCounter,
    KubernetesCompletedCheckpointStore,
    KubernetesJobGraphStore,
)
from weir.core.highavailability.leader_election import DefaultLeaderElectionService
from weir.core.highavailability.services import (
    CheckpointIdCounter,
    CompletedCheckpointStore,
    HighAvailabilityServices,
    JobGraphStore,
    LeaderElectionService,
    LeaderRetrievalService,
)
from weir.core.ids import JobId

DISPATCHER = "dispatcher"
RESOURCE_MANAGER = "resourcemanager"
_NAME = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def cluster_id(config: Mapping[str, str]) -> str:
    """``kubernetes.cluster-id``; else ``high-availability.cluster-id`` if it is a
    Kubernetes name (``/orders`` is ``orders``)."""
    explicit = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    if explicit:
        return explicit
    fallback = cfg.get(config, cfg.HA_CLUSTER_ID).strip("/")
    if len(fallback) <= cfg.CLUSTER_ID_MAX_LENGTH and _NAME.fullmatch(fallback):
        return fallback
    msg = (
        f"{cfg.HA_TYPE.key}: kubernetes names its ConfigMap after {cfg.KUBERNETES_CLUSTER_ID.key}, "
        f"which is unset, and {cfg.HA_CLUSTER_ID.key} {fallback!r} is no Kubernetes name; set "
        f"{cfg.KUBERNETES_CLUSTER_ID.key} (lowercase letters, digits and '-')"
    )
    raise ConfigurationError(msg)


def config_map_ref(config: Mapping[str, str]) -> ConfigMapRef:
    """The cluster's HA ConfigMap: namespace, name and labels."""
    cluster = cluster_id(config)
    return ConfigMapRef(
        namespace=cfg.get(config, cfg.KUBERNETES_NAMESPACE),
        name=f"{cluster}-cluster-config-map",
        labels={
            "app": cluster,
            "configmap-type": "high-availability",
            "type": "weir-native-kubernetes",
        },
    )


def create_api_client(
    config: Mapping[str, str], environment: Mapping[str, str] | None = None
) -> KubernetesApiClient:
    """A client of the configured API server whose credentials may use the HA ConfigMap:
    ConfigurationError, saying what to fix, when it does not answer or refuses."""
    ref = config_map_ref(config)
    connection = resolve_connection(config, environment)
    # One request waits at most the renew deadline: a leader's renewal must end in time
    # for it to notice that its leadership is over.
    client = KubernetesApiClient(
        connection, timeout_s=cfg.get(config, cfg.HA_KUBERNETES_RENEW_DEADLINE) / 1000
    )
    try:
        client.get_config_map(ref.namespace, ref.name)
    except KubernetesForbiddenError as exc:
        client.close()
        msg = (
            f"the Kubernetes API server refused {connection.source} access to ConfigMap "
            f"{ref.namespace}/{ref.name} ({exc}); its Role needs configmaps get, list, watch, "
            "create, update and delete in that namespace (the chart's Role has them)"
        )
        raise ConfigurationError(msg) from exc
    except KubernetesApiError as exc:
        client.close()
        msg = (
            f"the Kubernetes API server at {connection.server} ({connection.source}) could not "
            f"be asked for ConfigMap {ref.namespace}/{ref.name}: {exc}"
        )
        raise ConfigurationError(msg) from exc
    return client


class KubernetesHaServices(HighAvailabilityServices):
    def __init__(
        self,
        config: Mapping[str, str],
        identifier: str = "",
        *,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        storage_dir = cfg.get(config, cfg.HA_STORAGE_DIR).strip()
        if not storage_dir:
            msg = (
                f"{cfg.HA_TYPE.key} is kubernetes but {cfg.HA_STORAGE_DIR.key} is empty; set "
                "it to a directory every master can reach (any fsspec URL, e.g. "
                "file:///opt/weir/storage/ha on a shared claim, or s3://bucket/weir/ha)"
            )
            raise ConfigurationError(msg)
        cfg.check_relations(config)
        self.config_map = config_map_ref(config)
        self._storage_dir = f"{storage_dir.rstrip('/')}/{cluster_id(config)}"
        self._retry_period_s = cfg.get(config, cfg.HA_KUBERNETES_RETRY_PERIOD) / 1000
        self.client = create_api_client(config, environment)
        self.latch = KubernetesLeaderElector(
            self.client,
            self.config_map,
            identifier or f"{socket.gethostname()}:{os.getpid()}",
            lease_duration_s=cfg.get(config, cfg.HA_KUBERNETES_LEASE_DURATION) / 1000,
            renew_deadline_s=cfg.get(config, cfg.HA_KUBERNETES_RENEW_DEADLINE) / 1000,
            retry_period_s=self._retry_period_s,
            max_retries=cfg.get(config, cfg.HA_KUBERNETES_TRANSACTIONAL_MAX_RETRIES),
        )
        self._contending = False
        self._watcher: ConfigMapWatcher | None = None

    def start_contending(self) -> None:
        """Join the masters' election (a client that only retrieves leaders never does)."""
        if not self._contending:
            self._contending = True
            self.latch.start()

    def _token(self) -> str:
        token = self.latch.token
        if token is None:
            msg = "this master is not the leader; nothing written"
            raise LeaderLostError(msg)
        return token

    def _shared_watcher(self) -> ConfigMapWatcher:
        if self._watcher is None:
            self._watcher = ConfigMapWatcher(
                self.client, self.config_map.namespace, self.config_map.name, self._retry_period_s
            )
            self._watcher.start()
        return self._watcher

    def _election(self, component: str) -> LeaderElectionService:
        return DefaultLeaderElectionService(KubernetesLeaderElectionDriver(self.latch, component))

    def get_dispatcher_leader_election(self) -> LeaderElectionService:
        return self._election(DISPATCHER)

    def get_resource_manager_leader_election(self) -> LeaderElectionService:
        return self._election(RESOURCE_MANAGER)

    def get_job_master_leader_election(self, job_id: JobId) -> LeaderElectionService:
        return self._election(f"job-{job_id}")

    def get_dispatcher_leader_retriever(self) -> LeaderRetrievalService:
        return KubernetesLeaderRetrievalService(self._shared_watcher(), DISPATCHER)

    def get_resource_manager_leader_retriever(self) -> LeaderRetrievalService:
        return KubernetesLeaderRetrievalService(self._shared_watcher(), RESOURCE_MANAGER)

    def get_job_graph_store(self) -> JobGraphStore:
        return KubernetesJobGraphStore(self.latch, self._token, f"{self._storage_dir}/jobgraphs")

    def create_checkpoint_id_counter(self, job_id: JobId) -> CheckpointIdCounter:
        return KubernetesCheckpointIdCounter(self.latch, self._token, job_id)

    def create_completed_checkpoint_store(
        self, job_id: JobId, max_retained: int
    ) -> CompletedCheckpointStore:
        return KubernetesCompletedCheckpointStore(self.latch, self._token, job_id, max_retained)

    def completed_checkpoint_dir(self) -> str | None:
        return f"{self._storage_dir}/completedCheckpoints"

    def close(self) -> None:
        if self._contending:
            self.latch.stop()
        if self._watcher is not None:
            self._watcher.stop()
        self.client.close()
