"""Leader election and retrieval of one component (the Dispatcher, the ResourceManager, a
JobMaster) on top of the process's elector (``leader_elector``): the driver of the
component's ``DefaultLeaderElectionService``, as the ZooKeeper one sits on the latch.

While the process leads, the contender is granted leadership with the elector's fencing
token, then its address and token are published, fenced, under the data key
``leader.<component>`` of the cluster's ConfigMap (JSON ``{"address": ..., "token": ...}``).
A retriever trusts a published address only while the lease names its token: between a
leader's end and its successor's publication it hears "no leader", never the dead
leader's address once a successor holds the lease.
"""

from __future__ import annotations

import json
import logging
import threading

from weir.core.highavailability.kubernetes.api_client import ConfigMap
from weir.core.highavailability.kubernetes.config_map_watcher import ConfigMapWatcher
from weir.core.highavailability.kubernetes.leader_elector import (
    LEADER_KEY_PREFIX,
    KubernetesLeaderElector,
    holder_of,
)
from weir.core.highavailability.leader_election import LeaderElectionDriver, LeadershipListener
from weir.core.highavailability.services import LeaderListener, LeaderRetrievalService

logger = logging.getLogger(__name__)


def leader_key(component: str) -> str:
    return f"{LEADER_KEY_PREFIX}{component}"


def encode_leader(address: str, token: str) -> str:
    return json.dumps({"address": address, "token": token})


def published_leader(config_map: ConfigMap | None, component: str) -> tuple[str | None, str | None]:
    """The address and token ``component``'s leader published, if the lease still names
    that token; ``(None, None)`` otherwise."""
    if config_map is None:
        return None, None
    text = config_map.data.get(leader_key(component))
    if not text:
        return None, None
    try:
        info = json.loads(text)
        address, token = str(info["address"]), str(info["token"])
    except (ValueError, KeyError, TypeError):
        logger.warning("ignoring unreadable leader information %r", text[:100])
        return None, None
    if token != holder_of(config_map):
        return None, None
    return address, token


class KubernetesLeaderElectionDriver(LeaderElectionDriver):
    """One component's election on the process's elector; its leader under the data key
    ``leader.<component>`` of the cluster's ConfigMap."""

    def __init__(self, elector: KubernetesLeaderElector, component: str) -> None:
        self.component = component
        self._elector = elector
        self._key = leader_key(component)

    def add_listener(self, listener: LeadershipListener) -> None:
        self._elector.add_listener(listener)

    def remove_listener(self, listener: LeadershipListener) -> None:
        self._elector.remove_listener(listener)

    def has_leadership(self, token: str) -> bool:
        return self._elector.has_leadership(token)

    def confirm(self, token: str) -> bool:
        return self._elector.confirm(token)

    def publish(self, token: str, address: str) -> None:
        value = encode_leader(address, token)

        def put(data: dict[str, str]) -> dict[str, str] | None:
            if data.get(self._key) == value:
                return None
            data[self._key] = value
            return data

        self._elector.guarded_update(token, put)

    def take_down(self, token: str) -> None:
        def take_down(data: dict[str, str]) -> dict[str, str] | None:
            if self._key not in data:
                return None
            del data[self._key]
            return data

        self._elector.guarded_update(token, take_down)


class KubernetesLeaderRetrievalService(LeaderRetrievalService):
    """Follows a component's published leader in the cluster's ConfigMap; the listener
    hears every change, and ``(None, None)`` while there is no leader."""

    def __init__(self, watcher: ConfigMapWatcher, component: str) -> None:
        self._watcher = watcher
        self._component = component
        self._listener: LeaderListener | None = None
        self._last: tuple[str | None, str | None] | None = None
        self._lock = threading.Lock()

    def start(self, listener: LeaderListener) -> None:
        self._listener = listener
        self._watcher.add_listener(self._on_change)

    def _on_change(self, config_map: ConfigMap | None) -> None:
        leader = published_leader(config_map, self._component)
        with self._lock:
            listener = self._listener
            if listener is None or leader == self._last:
                return
            self._last = leader
        listener(*leader)

    def stop(self) -> None:
        self._watcher.remove_listener(self._on_change)
        with self._lock:
            self._listener = None
