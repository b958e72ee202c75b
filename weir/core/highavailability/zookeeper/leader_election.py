"""Leader election and retrieval of one component (the Dispatcher, the ResourceManager, a
JobMaster) on top of the process's latch (``leader_latch``): the driver of the component's
``DefaultLeaderElectionService``.

While the process leads, the contender is granted leadership with the latch's fencing
token, then its address and token are published, fenced, in the ephemeral node
``/leader/{component}/connection_info`` (JSON ``{"address": ..., "token": ...}``). The node
vanishes with the leader's session, so a retriever sees "no leader" between a leader's
death and its successor's publication, never a dead address for long.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from weir.core.errors import LeaderLostError
from weir.core.highavailability.leader_election import LeaderElectionDriver, LeadershipListener
from weir.core.highavailability.services import LeaderListener, LeaderRetrievalService
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


class ZooKeeperLeaderElectionDriver(LeaderElectionDriver):
    """One component's election on the process's latch; its leader in the ephemeral node
    ``/leader/{component}/connection_info``."""

    def __init__(self, client: Any, latch: ZooKeeperLeaderLatch, component: str) -> None:
        self.component = component
        self._client = client
        self._latch = latch
        self._path = connection_info_path(component)

    def add_listener(self, listener: LeadershipListener) -> None:
        self._latch.add_listener(listener)

    def remove_listener(self, listener: LeadershipListener) -> None:
        self._latch.remove_listener(listener)

    def add_suspend_listener(self, listener: Callable[[bool], None]) -> None:
        self._latch.add_suspend_listener(listener)

    def remove_suspend_listener(self, listener: Callable[[bool], None]) -> None:
        self._latch.remove_suspend_listener(listener)

    def has_leadership(self, token: str) -> bool:
        return self._latch.has_leadership(token)

    def confirm(self, token: str) -> bool:
        return self._latch.confirm(token)

    def publish(self, token: str, address: str) -> None:
        from kazoo.exceptions import NoNodeError  # noqa: PLC0415 (optional dependency)

        data = encode_leader(address, token)
        try:
            self._latch.await_reply(self._client.ensure_path_async(self._path.rsplit("/", 1)[0]))
            self._latch.guarded_transaction(token, lambda t: t.delete(self._path))
        except NoNodeError:
            pass  # nothing published before
        self._latch.guarded_transaction(token, lambda t: t.create(self._path, data, ephemeral=True))

    def take_down(self, token: str) -> None:
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (optional dependency)

        try:
            self._latch.guarded_transaction(token, lambda t: t.delete(self._path))
        except KazooException as exc:
            msg = f"{self._path}: {exc!r}"
            raise LeaderLostError(msg) from exc


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
