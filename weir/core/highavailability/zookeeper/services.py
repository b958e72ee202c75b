"""``high-availability.type: zookeeper``: the HighAvailabilityServices of a master process
(and the retrieval side of clients), on one kazoo client and one leader latch.

Example (a master)::

    services = ZooKeeperHaServices(config, identifier="127.0.0.1:6123")
    services.start_contending()
    token = services.latch.await_leadership()   # a standby waits here
    ...                                          # start the components with `services`
    services.close()
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

from weir.core import config as cfg
from weir.core.errors import ConfigurationError, LeaderLostError
from weir.core.highavailability.leader_election import DefaultLeaderElectionService
from weir.core.highavailability.services import (
    CheckpointIdCounter,
    CompletedCheckpointStore,
    HighAvailabilityServices,
    JobGraphStore,
    LeaderElectionService,
    LeaderRetrievalService,
)
from weir.core.highavailability.zookeeper.client import (
    DISPATCHER,
    RESOURCE_MANAGER,
    close_client,
    create_client,
)
from weir.core.highavailability.zookeeper.leader_election import (
    ZooKeeperLeaderElectionDriver,
    ZooKeeperLeaderRetrievalService,
)
from weir.core.highavailability.zookeeper.leader_latch import ZooKeeperLeaderLatch
from weir.core.highavailability.zookeeper.stores import (
    ZooKeeperCheckpointIdCounter,
    ZooKeeperCompletedCheckpointStore,
    ZooKeeperJobGraphStore,
)
from weir.core.ids import JobId


class ZooKeeperHaServices(HighAvailabilityServices):
    def __init__(self, config: Mapping[str, str], identifier: str = "") -> None:
        storage_dir = cfg.get(config, cfg.HA_STORAGE_DIR).strip()
        if not storage_dir:
            msg = (
                f"{cfg.HA_TYPE.key} is zookeeper but {cfg.HA_STORAGE_DIR.key} is empty; set "
                "it to a directory every master can reach (any fsspec URL, e.g. "
                "file:///shared/weir/ha or s3://bucket/weir/ha)"
            )
            raise ConfigurationError(msg)
        cluster = cfg.get(config, cfg.HA_CLUSTER_ID).strip("/") or "default"
        self._storage_dir = f"{storage_dir.rstrip('/')}/{cluster}"
        self.client = create_client(config)
        self.latch = ZooKeeperLeaderLatch(
            self.client,
            identifier or f"{socket.gethostname()}:{os.getpid()}",
            tolerate_suspended_connections=cfg.get(
                config, cfg.HA_ZK_TOLERATE_SUSPENDED_CONNECTIONS
            ),
            session_timeout_ms=cfg.get(config, cfg.HA_ZK_SESSION_TIMEOUT),
        )
        self._contending = False

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

    def _election(self, component: str) -> LeaderElectionService:
        return DefaultLeaderElectionService(
            ZooKeeperLeaderElectionDriver(self.client, self.latch, component)
        )

    def get_dispatcher_leader_election(self) -> LeaderElectionService:
        return self._election(DISPATCHER)

    def get_resource_manager_leader_election(self) -> LeaderElectionService:
        return self._election(RESOURCE_MANAGER)

    def get_job_master_leader_election(self, job_id: JobId) -> LeaderElectionService:
        return self._election(f"job-{job_id}")

    def get_dispatcher_leader_retriever(self) -> LeaderRetrievalService:
        return ZooKeeperLeaderRetrievalService(self.client, DISPATCHER)

    def get_resource_manager_leader_retriever(self) -> LeaderRetrievalService:
        return ZooKeeperLeaderRetrievalService(self.client, RESOURCE_MANAGER)

    def get_job_graph_store(self) -> JobGraphStore:
        return ZooKeeperJobGraphStore(
            self.client, self.latch, self._token, f"{self._storage_dir}/jobgraphs"
        )

    def create_checkpoint_id_counter(self, job_id: JobId) -> CheckpointIdCounter:
        return ZooKeeperCheckpointIdCounter(self.client, self.latch, self._token, job_id)

    def create_completed_checkpoint_store(
        self, job_id: JobId, max_retained: int
    ) -> CompletedCheckpointStore:
        return ZooKeeperCompletedCheckpointStore(
            self.client, self.latch, self._token, job_id, max_retained
        )

    def completed_checkpoint_dir(self) -> str | None:
        return f"{self._storage_dir}/completedCheckpoints"

    def close(self) -> None:
        if self._contending:
            self.latch.stop()
        close_client(self.client)


def create_ha_services(config: Mapping[str, str], identifier: str = "") -> Any:
    """The HA services ``high-availability.type`` names: None for ``none`` (the caller
    uses standalone services with its own addresses), ZooKeeper ones otherwise."""
    if cfg.get(config, cfg.HA_TYPE) == "zookeeper":
        return ZooKeeperHaServices(config, identifier)
    return None
