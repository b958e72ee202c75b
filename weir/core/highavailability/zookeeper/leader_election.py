"""Leader election and retrieval of one component (the Dispatcher, the ResourceManager, a
JobMaster) on top of the process's latch (``leader_latch``), as Flink's
``DefaultLeaderElectionService`` sits on its per-process driver.

While the process leads, the contender is granted leadership with the latch's fencing
token, then its address and token are published, fenced, in the ephemeral node
``/leader/{component}/connection_info`` (JSON ``{"address": ..., "token": ...}``). The node
vanishes with the leader's session, so a retriever sees "no leader" between a leader's
death and its successor's publication, never a dead address for long.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from weir.core.errors import LeaderLostError
from weir.core.highavailability.services import (
    LeaderContender,
    LeaderElectionService,
    LeaderListener,
    LeaderRetrievalService,
)
from weir.core.highavailability.zookeeper.client import connection_info_path
from weir.core.highavailability.zookeeper.leader_latch import ZooKeeperLeaderLatch

logger = logging.getLogger(__name__)


def encode_leader(address: str, token: str) -> bytes:
    return json.dumps({"address": address, "token": token}).encode()


def decode_leader(data: bytes | None) -> tuple[str | None, str | None]:
    if not data:
        return None, None
    try:
        info = json.loads(data)
        return str(info["address"]), str(info["token"])
    except (ValueError, KeyError, TypeError):
        logger.warning("ignoring unreadable leader information %r", data[:100])
        return None, None


class ZooKeeperLeaderElectionService(LeaderElectionService):
    def __init__(self, client: Any, latch: ZooKeeperLeaderLatch, component: str) -> None:
        self._client = client
        self._latch = latch
        self._component = component
        self._path = connection_info_path(component)
        self._contender: LeaderContender | None = None
        self._token: str | None = None
        self._lock = threading.Lock()

    def start(self, contender: LeaderContender) -> None:
        self._contender = contender
        self._latch.add_suspend_listener(self._on_suspend)
        self._latch.add_listener(self._on_leadership)

    def _on_suspend(self, suspended: bool) -> None:
        contender = self._contender
        if contender is not None and self._token is not None:
            contender.suspend_leadership(suspended)

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
        from kazoo.exceptions import NoNodeError  # noqa: PLC0415 (optional dependency)

        data = encode_leader(address, token)
        try:
            self._latch.await_reply(self._client.ensure_path_async(self._path.rsplit("/", 1)[0]))
            self._latch.guarded_transaction(token, lambda t: t.delete(self._path))
        except NoNodeError:
            pass  # nothing published before
        except LeaderLostError:
            logger.warning("%s: leadership ended before its address was published", self._component)
            return
        try:
            self._latch.guarded_transaction(
                token, lambda t: t.create(self._path, data, ephemeral=True)
            )
        except LeaderLostError:
            logger.warning("%s: leadership ended before its address was published", self._component)
            return
        logger.info("%s leader at %s published", self._component, address)

    def stop(self) -> None:
        """Leave: a leader takes its address down (fenced) before the contender goes."""
        self._latch.remove_listener(self._on_leadership)
        self._latch.remove_suspend_listener(self._on_suspend)
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (optional dependency)

        with self._lock:
            token, self._token = self._token, None
        contender, self._contender = self._contender, None
        if token is not None:
            try:
                self._latch.guarded_transaction(token, lambda t: t.delete(self._path))
            except (LeaderLostError, KazooException):
                # Gone with the session already, or no longer ours: nothing to take down.
                logger.info("%s: its address was already taken down", self._component)
            if contender is not None:
                contender.revoke_leadership()

    def has_leadership(self, fencing_token: str) -> bool:
        with self._lock:
            mine = self._token
        return mine is not None and mine == fencing_token and self._latch.has_leadership(mine)

    def confirm_leadership(self, fencing_token: str) -> bool:
        return self.has_leadership(fencing_token) and self._latch.confirm(fencing_token)


class ZooKeeperLeaderRetrievalService(LeaderRetrievalService):
    """Watches a component's connection info; the listener hears every change, and
    ``(None, None)`` while there is no leader."""

    def __init__(self, client: Any, component: str) -> None:
        self._client = client
        self._path = connection_info_path(component)
        self._stopped = False
        self._last: tuple[str | None, str | None] | None = None

    def start(self, listener: LeaderListener) -> None:
        def on_change(data: bytes | None, _stat: Any) -> bool:
            if self._stopped:
                return False  # removes the watch
            leader = decode_leader(data)
            if leader != self._last:
                self._last = leader
                listener(*leader)
            return True

        self._client.DataWatch(self._path, on_change)

    def stop(self) -> None:
        self._stopped = True
