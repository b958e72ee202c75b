"""How a client finds the leading Dispatcher under high availability (Flink's leader
retrieval on the client side): it follows the Dispatcher's published address in ZooKeeper
or in the cluster's Kubernetes ConfigMap, and a ``DispatcherGateway`` asks it again
whenever its Dispatcher is gone or deposed, so ``weir run``, ``list``, ``cancel`` and a
running ``execute_and_collect`` follow a change of leader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping

from weir.core import config as cfg
from weir.core.errors import ServiceUnavailableError
from weir.core.highavailability.kubernetes.config_map_watcher import ConfigMapWatcher
from weir.core.highavailability.kubernetes.leader_election import KubernetesLeaderRetrievalService
from weir.core.highavailability.kubernetes.services import DISPATCHER as KUBERNETES_DISPATCHER
from weir.core.highavailability.kubernetes.services import config_map_ref, create_api_client
from weir.core.highavailability.services import LeaderRetrievalService
from weir.core.highavailability.zookeeper.client import DISPATCHER, close_client, create_client
from weir.core.highavailability.zookeeper.leader_election import ZooKeeperLeaderRetrievalService

logger = logging.getLogger(__name__)

# How long a client waits for a leader: a failover is the time the dead leader keeps its
# leadership (the ZooKeeper session timeout, or the Kubernetes lease duration) plus the new
# leader's start (its SparkContext, a few seconds), so twice that plus a minute covers a
# slow machine too.
_START_WAIT_S = 60.0


class HaDispatcherLookup:
    """Callable as a ``LeaderLookup``; ``close()`` when done."""

    def __init__(
        self,
        retrieval: LeaderRetrievalService,
        where: str,
        wait_s: float,
        on_close: Callable[[], None],
    ) -> None:
        self._where = where
        self._wait_s = wait_s
        self._on_close = on_close
        self._changed = threading.Condition()
        self._address: str | None = None
        self._retrieval = retrieval
        self._retrieval.start(self._on_leader)

    def _on_leader(self, address: str | None, _token: str | None) -> None:
        with self._changed:
            self._address = address
            self._changed.notify_all()

    def __call__(self, failed: str | None) -> str:
        """The leader's address, once there is one other than ``failed``; the same one
        again if it is still published at the deadline (it may have been a blip)."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._address is not None and self._address != failed, self._wait_s
            )
            address = self._address
        if address is None:
            msg = (
                f"no Dispatcher leads this cluster in {self._where} after {self._wait_s:.0f} s; "
                "start a master (deploy/bin/start-cluster.sh) or check "
                "high-availability.cluster-id (kubernetes.cluster-id with Kubernetes HA)"
            )
            raise ServiceUnavailableError(msg)
        return address

    def close(self) -> None:
        self._retrieval.stop()
        self._on_close()


class ZooKeeperDispatcherLookup(HaDispatcherLookup):
    """The Dispatcher's address in ZooKeeper."""

    def __init__(self, config: Mapping[str, str]) -> None:

        client = create_client(config)
        super().__init__(
            ZooKeeperLeaderRetrievalService(client, DISPATCHER),
            f"ZooKeeper ({cfg.get(config, cfg.HA_ZK_QUORUM)})",
            2 * cfg.get(config, cfg.HA_ZK_SESSION_TIMEOUT) / 1000 + _START_WAIT_S,
            lambda: close_client(client),
        )


class KubernetesDispatcherLookup(HaDispatcherLookup):
    """The Dispatcher's address in the cluster's Kubernetes ConfigMap."""

    def __init__(self, config: Mapping[str, str]) -> None:

        ref = config_map_ref(config)
        client = create_api_client(config)
        retry_period_s = cfg.get(config, cfg.HA_KUBERNETES_RETRY_PERIOD) / 1000
        watcher = ConfigMapWatcher(client, ref.namespace, ref.name, retry_period_s)
        watcher.start()

        def close() -> None:
            watcher.stop()
            client.close()

        super().__init__(
            KubernetesLeaderRetrievalService(watcher, KUBERNETES_DISPATCHER),
            f"Kubernetes ConfigMap {ref.namespace}/{ref.name}",
            2 * cfg.get(config, cfg.HA_KUBERNETES_LEASE_DURATION) / 1000 + _START_WAIT_S,
            close,
        )


def dispatcher_lookup(config: Mapping[str, str]) -> HaDispatcherLookup | None:
    """A lookup when the configuration says high availability, else None."""
    kind = cfg.get(config, cfg.HA_TYPE)
    if kind == "zookeeper":
        return ZooKeeperDispatcherLookup(config)
    if kind == "kubernetes":
        return KubernetesDispatcherLookup(config)
    return None
