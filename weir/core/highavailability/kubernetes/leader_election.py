"""Leader election and retrieval of one component (the Dispatcher, the ResourceManager, a
JobMaster) on top of the process's elector (``leader_elector``), as the ZooKeeper ones sit
on the process's latch.

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

from weir.core.errors import LeaderLostError
from weir.core.highavailability.kubernetes.api_client import ConfigMap
from weir.core.highavailability.kubernetes.config_map_watcher import ConfigMapWatcher
from weir.core.highavailability.kubernetes.leader_elector import (
    LEADER_KEY_PREFIX,
    KubernetesLeaderElector,
    holder_of,
)
from weir.core.highavailability.services import (
    LeaderContender,
    LeaderElectionService,
    LeaderListener,
    LeaderRetrievalService,
)

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


class KubernetesLeaderElectionService(LeaderElectionService):
    def __init__(self, elector: KubernetesLeaderElector, component: str) -> None:
        self._elector = elector
        self._component = component
        self._key = leader_key(component)
        self._contender: LeaderContender | None = None
        self._token: str | None = None
        self._lock = threading.Lock()

    def start(self, contender: LeaderContender) -> None:
        self._contender = contender
        self._elector.add_listener(self._on_leadership)

    def _on_leadership(self, token: str | None) -> None:
        contender = self._contender
        if contender is None:
            return
        if token is None:
            with self._lock:
                had, self._token = self._token, None
            if had is not None:
                contender.revoke_leadership()
            return
        with self._lock:
            self._token = token
        contender.grant_leadership(token)
        self._publish(contender.address, token)

    def _publish(self, address: str, token: str) -> None:
        value = encode_leader(address, token)

        def put(data: dict[str, str]) -> dict[str, str] | None:
            if data.get(self._key) == value:
                return None
            data[self._key] = value
            return data

        try:
            self._elector.guarded_update(token, put)
        except LeaderLostError as exc:
            logger.warning(
                "%s: leadership ended before its address was published: %s", self._component, exc
            )
            return
        logger.info("%s leader at %s published", self._component, address)

    def stop(self) -> None:
        """Leave: a leader takes its address down (fenced) before the contender goes."""
        self._elector.remove_listener(self._on_leadership)
        with self._lock:
            token, self._token = self._token, None
        contender, self._contender = self._contender, None
        if token is None:
            return

        def take_down(data: dict[str, str]) -> dict[str, str] | None:
            if self._key not in data:
                return None
            del data[self._key]
            return data

        try:
            self._elector.guarded_update(token, take_down)
        except LeaderLostError:
            # Gone with the lease already, or no longer ours: nothing to take down.
            logger.info("%s: its address was already taken down", self._component)
        if contender is not None:
            contender.revoke_leadership()

    def has_leadership(self, fencing_token: str) -> bool:
        with self._lock:
            mine = self._token
        return mine is not None and mine == fencing_token and self._elector.has_leadership(mine)

    def confirm_leadership(self, fencing_token: str) -> bool:
        return self.has_leadership(fencing_token) and self._elector.confirm(fencing_token)


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
