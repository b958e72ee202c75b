"""Leader election of one component (the Dispatcher, the ResourceManager, a JobMaster) over
the process's leadership, as Flink's ``DefaultLeaderElectionService`` sits on its driver.

The service (``DefaultLeaderElectionService``) keeps the contender and the token it was
granted: while the process leads, the contender is granted leadership with the process's
fencing token, then its address and token are published, fenced; when the process stops
leading, the contender's leadership is revoked; a component that leaves takes its address
down first. The driver (``LeaderElectionDriver``) is where leadership comes from and where
the address goes: ZooKeeper's latch and an ephemeral node, or Kubernetes' lease and the
cluster's ConfigMap.
"""

from __future__ import annotations

import abc
import logging
import threading
from collections.abc import Callable

from weir.core.errors import LeaderLostError
from weir.core.highavailability.services import LeaderContender, LeaderElectionService

logger = logging.getLogger(__name__)

LeadershipListener = Callable[[str | None], None]
"""Called with the process's fencing token when it becomes leader, None when it stops."""


class LeaderElectionDriver(abc.ABC):
    """The process's leadership, as one component's election sees it, and the place that
    component's leader publishes its address."""

    component: str

    @abc.abstractmethod
    def add_listener(self, listener: LeadershipListener) -> None: ...

    @abc.abstractmethod
    def remove_listener(self, listener: LeadershipListener) -> None: ...

    def add_suspend_listener(self, listener: Callable[[bool], None]) -> None:  # noqa: B027
        """Hears when leadership falls in doubt (True) and is confirmed again (False);
        nothing by default: only a connection that can be suspended has such moments."""

    def remove_suspend_listener(self, listener: Callable[[bool], None]) -> None:  # noqa: B027
        """Stops telling ``listener``; nothing by default."""

    @abc.abstractmethod
    def has_leadership(self, token: str) -> bool:
        """True while the process leads with ``token``, as this process sees it."""

    @abc.abstractmethod
    def confirm(self, token: str) -> bool:
        """True if the source of truth says the process still leads with ``token``."""

    @abc.abstractmethod
    def publish(self, token: str, address: str) -> None:
        """Publishes the component's leader, fenced by ``token``; LeaderLostError once that
        leadership has ended."""

    @abc.abstractmethod
    def take_down(self, token: str) -> None:
        """Takes the component's published leader down, fenced by ``token``;
        LeaderLostError when it is gone already or no longer this leadership's."""


class DefaultLeaderElectionService(LeaderElectionService):
    def __init__(self, driver: LeaderElectionDriver) -> None:
        self._driver = driver
        self._contender: LeaderContender | None = None
        self._token: str | None = None  # the token the contender was granted
        self._lock = threading.Lock()

    def start(self, contender: LeaderContender) -> None:
        self._contender = contender
        self._driver.add_suspend_listener(self._on_suspend)
        self._driver.add_listener(self._on_leadership)

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
        address = contender.address
        try:
            self._driver.publish(token, address)
        except LeaderLostError as exc:
            logger.warning(
                "%s: leadership ended before its address was published: %s",
                self._driver.component,
                exc,
            )
            return
        logger.info("%s leader at %s published", self._driver.component, address)

    def stop(self) -> None:
        """Leave: a leader takes its address down (fenced) before the contender goes."""
        self._driver.remove_listener(self._on_leadership)
        self._driver.remove_suspend_listener(self._on_suspend)
        with self._lock:
            token, self._token = self._token, None
        contender, self._contender = self._contender, None
        if token is None:
            return
        try:
            self._driver.take_down(token)
        except LeaderLostError:
            # Gone with the session or lease already, or no longer ours: nothing to take down.
            logger.info("%s: its address was already taken down", self._driver.component)
        if contender is not None:
            contender.revoke_leadership()

    def has_leadership(self, fencing_token: str) -> bool:
        with self._lock:
            mine = self._token
        return mine is not None and mine == fencing_token and self._driver.has_leadership(mine)

    def confirm_leadership(self, fencing_token: str) -> bool:
        return self.has_leadership(fencing_token) and self._driver.confirm(fencing_token)
