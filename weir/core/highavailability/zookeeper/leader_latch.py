"""One leadership per master process, as Flink (1.15 on) elects one leader per JobManager
process and hands it to every component in it: the process contends under
``/leader/latch`` with kazoo's ``Election`` recipe (ephemeral sequential nodes; the lowest
leads), and while it leads, its Dispatcher, ResourceManager and JobMasters are leaders
with one fencing token, a random id of this leadership session.

Connection states, one log line each:

* SUSPENDED (the connection dropped, the session may still be alive): leaders suspend.
  ``has_leadership`` is False, so nothing is committed on the strength of a leadership
  that may already be someone else's; the suspend listeners are told.
* LOST (the session expired: its ephemeral nodes, our latch node among them, are gone):
  leadership is given up; the revoke listeners are told. The latch then contends again
  with a new session, so a master whose quorum comes back becomes leader or standby.
* CONNECTED again with the session intact: leaders resume. CONNECTED after LOST is a new
  session: nothing resumes (the line says so).

Every write a leader makes to ZooKeeper (``guarded_transaction``) carries a check that
its latch node still exists: a deposed leader's write fails in ZooKeeper itself, whatever
its own threads believe (no split brain).

Threading: kazoo calls the connection listener on its own thread; it only sets flags and
events, and hands the suspend listeners to a thread of the latch's (they take locks that
threads waiting for ZooKeeper replies may hold, and those replies arrive on kazoo's
thread). Grants and revocations run on the latch's thread, one at a time.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from weir.core.errors import LeaderLostError
from weir.core.highavailability.zookeeper.client import LATCH_PATH

logger = logging.getLogger(__name__)

LeadershipListener = Callable[[str | None], None]
"""Called with the fencing token when leadership is granted, None when revoked."""


class ZooKeeperLeaderLatch:
    def __init__(self, client: Any, identifier: str) -> None:
        self._client = client
        self._identifier = identifier
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._token: str | None = None
        self._node: str | None = None
        self._suspended = False
        self._session_replaced = False
        """The session was LOST: the next CONNECTED is a new session, not a resumption."""
        self._lost = threading.Event()
        self._stopped = threading.Event()
        self._connected = threading.Event()
        self._listeners: list[LeadershipListener] = []
        self._suspend_listeners: list[Callable[[bool], None]] = []
        self._election: Any = None
        self._thread: threading.Thread | None = None
        # Suspend listeners run here, one change at a time, in the order they happened.
        self._events = ThreadPoolExecutor(1, thread_name_prefix="weir-leader-latch-events")
        self.leaderships = 0
        """How many times this latch became leader (for tests and logs)."""

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._client.add_listener(self._on_connection_state)
        if self._client.connected:
            self._connected.set()
        self._thread = threading.Thread(
            target=self._contend_loop, daemon=True, name="weir-leader-latch"
        )
        self._thread.start()

    def stop(self) -> None:
        """Leave the election; a leader gives up its leadership (listeners are told)."""
        self._stopped.set()
        self._lost.set()
        self._connected.set()
        election = self._election
        if election is not None:
            election.cancel()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._client.remove_listener(self._on_connection_state)
        self._events.shutdown(wait=False)

    def add_listener(self, listener: LeadershipListener) -> None:
        """``listener(token)`` now if leading, and on every grant and revocation."""
        with self._lock:
            self._listeners.append(listener)
            token = self._token
        if token is not None:
            listener(token)

    def remove_listener(self, listener: LeadershipListener) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def add_suspend_listener(self, listener: Callable[[bool], None]) -> None:
        """``listener(True)`` on SUSPENDED while leading, ``listener(False)`` on resuming."""
        with self._lock:
            self._suspend_listeners.append(listener)

    def remove_suspend_listener(self, listener: Callable[[bool], None]) -> None:
        with self._lock:
            if listener in self._suspend_listeners:
                self._suspend_listeners.remove(listener)

    # -- queries -----------------------------------------------------------------------
    @property
    def token(self) -> str | None:
        with self._lock:
            return self._token

    def has_leadership(self, token: str) -> bool:
        with self._lock:
            return self._token is not None and token == self._token and not self._suspended

    def await_leadership(self, timeout: float | None = None) -> str | None:
        """The fencing token once this process leads; None at the timeout or on stop."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._token is not None or self._stopped.is_set(), timeout
            )
            return self._token

    def await_revocation(self, timeout: float | None = None) -> bool:
        """True once leadership is gone (LOST, or stop)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._token is None, timeout)

    def confirm(self, token: str) -> bool:
        """Ask ZooKeeper, now, whether the latch node of leadership ``token`` still exists
        in a live session (a paused leader's view of itself may be stale)."""
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (optional dependency)

        with self._lock:
            node = self._node if token == self._token and not self._suspended else None
        if node is None:
            return False
        try:
            self._client.sync(node)
            return self._client.exists(node) is not None and self.has_leadership(token)
        except KazooException:
            return False

    # -- fenced writes -----------------------------------------------------------------
    def guarded_transaction(self, token: str, build: Callable[[Any], None]) -> list[Any]:
        """Run the operations ``build`` adds to a kazoo transaction, together with a check
        that this leadership's latch node still exists. Raises LeaderLostError when the
        leadership of ``token`` is over (in this process's view or in ZooKeeper's)."""
        from kazoo.exceptions import (  # noqa: PLC0415 (optional dependency)
            KazooException,
            NoNodeError,
            RolledBackError,
        )

        with self._lock:
            node = self._node if token == self._token and not self._suspended else None
        if node is None:
            msg = f"this master no longer leads (leader session {token[:8]}); nothing written"
            raise LeaderLostError(msg)
        transaction = self._client.transaction()
        transaction.check(node, -1)
        build(transaction)
        try:
            results = transaction.commit()
        except KazooException as exc:
            msg = f"a fenced ZooKeeper write failed ({type(exc).__name__}); nothing written"
            raise LeaderLostError(msg) from exc
        if results and isinstance(results[0], NoNodeError):
            msg = (
                f"ZooKeeper refused a write of leader session {token[:8]}: its leadership "
                "ended (the session expired); nothing written"
            )
            raise LeaderLostError(msg)
        for result in results:
            if isinstance(result, Exception) and not isinstance(result, RolledBackError):
                raise result
        return list(results)

    # -- the election ------------------------------------------------------------------
    def _contend_loop(self) -> None:
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (optional dependency)

        while not self._stopped.is_set():
            self._lost.clear()
            self._election = self._client.Election(LATCH_PATH, self._identifier)
            try:
                self._election.run(self._lead)
            except KazooException as exc:
                # The session ended while contending or releasing: contend again with the
                # client's next session (kazoo reconnects on its own).
                logger.info("leader election interrupted (%s); contending again", exc)
            # Contend again once connected (at once when the session survived).
            while not self._stopped.is_set() and not self._connected.wait(1.0):
                pass

    def _lead(self) -> None:
        election = self._election
        node = f"{LATCH_PATH}/{election.lock.node}"
        token = uuid.uuid4().hex
        with self._lock:
            if self._lost.is_set() or self._stopped.is_set():
                return
            self._token, self._node, self._suspended = token, node, False
            self.leaderships += 1
            listeners = list(self._listeners)
            self._changed.notify_all()
        logger.info("this master (%s) is now the leader, session %s", self._identifier, token)
        for listener in listeners:
            listener(token)
        self._lost.wait()
        with self._lock:
            self._token = self._node = None
            listeners = list(self._listeners)
            self._changed.notify_all()
        for listener in listeners:
            listener(None)

    def _on_connection_state(self, state: str) -> None:
        """kazoo's thread: flags and events only, one log line per change."""
        new_session = False
        with self._lock:
            leading = self._token is not None
            if state == "SUSPENDED":
                self._suspended = True
                listeners = list(self._suspend_listeners) if leading else []
                suspended: bool | None = True
            elif state == "LOST":
                # The next CONNECTED is a new session: nothing resumes, the latch
                # contends again (leadership stays in doubt until it is given up).
                self._session_replaced = True
                suspended = None
                listeners = []
            elif self._session_replaced:  # CONNECTED with the new session
                self._session_replaced = False
                suspended = None
                listeners = []
                new_session = True
            else:  # CONNECTED: the session survived the interruption
                was = self._suspended
                self._suspended = False
                listeners = list(self._suspend_listeners) if leading and was else []
                suspended = False if was else None
        if state == "CONNECTED":
            self._connected.set()
        else:
            self._connected.clear()
        if state == "SUSPENDED":
            logger.warning(
                "ZooKeeper connection SUSPENDED: %s until it is back or the session expires",
                "leaders suspend (no checkpoint completes)" if leading else "waiting",
            )
        elif state == "LOST":
            logger.error(
                "ZooKeeper session LOST: %s",
                "giving up leadership; jobs resume under the next leader"
                if leading
                else "contending again once connected",
            )
            self._lost.set()
        elif new_session:
            logger.info("ZooKeeper connected again with a new session: contending again")
        elif suspended is False:
            logger.info("ZooKeeper connection back with the session intact: leaders resume")
        if suspended is not None and listeners:
            # Not on kazoo's thread: a hook may wait for a lock held by a thread that
            # waits for a ZooKeeper reply, and replies come in on kazoo's thread.
            self._events.submit(_notify, listeners, suspended)


def _notify(listeners: list[Callable[[bool], None]], suspended: bool) -> None:
    for listener in listeners:
        listener(suspended)
