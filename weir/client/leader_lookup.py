"""How a client finds the leading Dispatcher under ZooKeeper high availability (Flink's
leader retrieval on the client side): it watches the Dispatcher's connection info in
ZooKeeper, and a ``DispatcherGateway`` asks it again whenever its Dispatcher is gone or
deposed, so ``weir run``, ``list``, ``cancel`` and a running ``execute_and_collect``
follow a change of leader.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from weir.core import config as cfg
from weir.core.errors import ServiceUnavailableError
from weir.core.highavailability.zookeeper.client import DISPATCHER, close_client, create_client
from weir.core.highavailability.zookeeper.leader_election import ZooKeeperLeaderRetrievalService

logger = logging.getLogger(__name__)

# How long a client waits for a leader: a failover is the ZooKeeper session timeout (the
# dead leader's session must expire) plus the new leader's start (its SparkContext, a few
# seconds), so twice the session timeout plus a minute covers a slow machine too.
_START_WAIT_S = 60.0


class ZooKeeperDispatcherLookup:
    """Callable as a ``LeaderLookup``; ``close()`` when done."""

    def __init__(self, config: Mapping[str, str]) -> None:
        self._quorum = cfg.get(config, cfg.HA_ZK_QUORUM)
        self._wait_s = 2 * cfg.get(config, cfg.HA_ZK_SESSION_TIMEOUT) / 1000 + _START_WAIT_S
        self._client: Any = create_client(config)
        self._changed = threading.Condition()
        self._address: str | None = None
        self._retrieval = ZooKeeperLeaderRetrievalService(self._client, DISPATCHER)
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
                f"no Dispatcher leads this cluster in ZooKeeper ({self._quorum}) after "
                f"{self._wait_s:.0f} s; start a master (deploy/bin/start-cluster.sh) or check "
                "high-availability.cluster-id"
            )
            raise ServiceUnavailableError(msg)
        return address

    def close(self) -> None:
        self._retrieval.stop()
        close_client(self._client)


def dispatcher_lookup(config: Mapping[str, str]) -> ZooKeeperDispatcherLookup | None:
    """A lookup when the configuration says ZooKeeper high availability, else None."""
    if cfg.get(config, cfg.HA_TYPE) != "zookeeper":
        return None
    return ZooKeeperDispatcherLookup(config)
