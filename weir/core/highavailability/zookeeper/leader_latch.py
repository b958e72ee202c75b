"""One leadership per master process, as Flink (1.15 on) elects one leader per JobManager
process and hands it to every component in it: the process contends under
``/leader/latch`` with kazoo's ``Election`` recipe (ephemeral sequential nodes; the lowest
leads), and while it leads, its Dispatcher, ResourceManager and JobMasters are leaders
with one fencing token, a random id of this leadership session.

Connection states, one log line each:

* SUSPENDED (the connection dropped, the session may still be alive): by default
  (``high-availability.zookeeper.client.tolerate-suspended-connections: false``, Flink's
  default, Curator's ``StandardConnectionStateErrorPolicy``) leadership is given up at
  once: the revoke listeners are told. A leader cut off from its quorum cannot learn that
  its session expired (kazoo reports LOST only once it reconnects), while ZooKeeper may
  expire it and elect a standby at any moment; giving up now stops its jobs before the
  standby restores them. Tolerated, leaders suspend instead: ``has_leadership`` is False,
  so nothing is committed on the strength of a leadership that may already be someone
  else's, and the suspend listeners are told; leadership is given up once the connection
  has been suspended for the session timeout by this process's own clock (Curator's LOST
  after the session timeout), since by then ZooKeeper may well have expired the session.
* LOST (the session expired: its ephemeral nodes, our latch node among them, are gone):
  leadership is given up; the revoke listeners are told.
* CONNECTED again with the session intact: suspended leaders resume; a latch that gave up
  its leadership releases its node (the standby next in line leads) and contends again
  with the same session. CONNECTED after LOST is a new session: the latch contends again
  with it. Either way a master whose quorum comes back becomes leader or standby.

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
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from weir.core.errors import LeaderLostError, PossibleInconsistentStateError
from weir.core.highavailability.zookeeper.client import LATCH_PATH

logger = logging.getLogger(__name__)

LeadershipListener = Callable[[str | None], None]
"""Called with the fencing token when leadership is granted, None when revoked."""

_TOLERATE_KEY = "high-availability.zookeeper.client.tolerate-suspended-connections"
# A leader whose suspended connection is tolerated looks at its clock at least this often
# while it waits: the wait for the session timeout to pass needs no other wake-up.
_SUSPENSION_CHECK_S = 0.5
# A thread waiting for ZooKeeper's reply looks at the connection this often: a request
# answered normally takes milliseconds, and one whose connection dropped is given up
# within this time instead of waiting for the connection to come back.
_REPLY_CHECK_S = 0.1


class ZooKeeperLeaderLatch:
    """``tolerate_suspended_connections``: see the module docstring; ``session_timeout_ms``
    how long a tolerated suspension may last, by ``clock`` (monotonic seconds)."""

    def __init__(
        self,
        client: Any,
        identifier: str,
        *,
        tolerate_suspended_connections: bool = False,
        session_timeout_ms: int = 60_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._identifier = identifier
        self._tolerate_suspended = tolerate_suspended_connections
        self._session_timeout_ms = session_timeout_ms
        self._clock = clock
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._token: str | None = None
        self._node: str | None = None
        self._suspended = False
        self._suspended_since: float | None = None
        """When the connection was suspended (by ``clock``); None while connected."""
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
        with self._changed:
            self._lost.set()
            self._changed.notify_all()
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
        """True once leadership is gone (given up, or stop)."""
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
            self.await_reply(self._client.sync_async(node))
            stat = self.await_reply(self._client.exists_async(node))
        except (KazooException, LeaderLostError):
            return False
        return stat is not None and self.has_leadership(token)

    def await_reply(self, result: Any) -> Any:
        """The reply to a request made with kazoo's asynchronous API. kazoo keeps a request
        made while the connection is down until the connection is back, however long the
        cut lasts; this wait ends with LeaderLostError as soon as the connection is down
        (the request may still reach ZooKeeper once it is back)."""
        timeout_error = self._client.handler.timeout_exception
        while True:
            try:
                return result.get(timeout=_REPLY_CHECK_S)
            except timeout_error:
                if not self._client.connected:
                    msg = (
                        "ZooKeeper is unreachable: the connection dropped before it answered; "
                        "leadership is in doubt until it is back"
                    )
                    raise LeaderLostError(msg) from None

    # -- fenced writes -----------------------------------------------------------------
    def guarded_transaction(self, token: str, build: Callable[[Any], None]) -> list[Any]:
        """Run the operations ``build`` adds to a kazoo transaction, together with a check
        that this leadership's latch node still exists. Raises LeaderLostError when the
        leadership of ``token`` is over (in this process's view or in ZooKeeper's), and
        PossibleInconsistentStateError when the connection dropped before ZooKeeper
        answered: the write may have been applied, or may still be once the connection is
        back with the session intact, so what it registers must not be deleted."""
        from kazoo.exceptions import (  # noqa: PLC0415 (optional dependency)
            ConnectionLoss,
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
            results = self.await_reply(transaction.commit_async())
        except (ConnectionLoss, LeaderLostError) as exc:
            msg = (
                f"a fenced ZooKeeper write lost its connection before the answer "
                f"({type(exc).__name__}): it may or may not be applied"
            )
            raise PossibleInconsistentStateError(msg) from exc
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
            if self._suspended:
                # Won just as the connection dropped: in doubt from the start, and nobody
                # told to suspend. The node goes once the connection is back, and the
                # latch contends again.
                logger.info("won the election while the ZooKeeper connection is suspended")
                return
            self._token, self._node = token, node
            self.leaderships += 1
            listeners = list(self._listeners)
            self._changed.notify_all()
        logger.info("this master (%s) is now the leader, session %s", self._identifier, token)
        for listener in listeners:
            listener(token)
        self._await_loss()
        with self._lock:
            self._token = self._node = None
            listeners = list(self._listeners)
            self._changed.notify_all()
        for listener in listeners:
            listener(None)

    def _await_loss(self) -> None:
        """Until leadership is lost: stop, LOST, SUSPENDED when not tolerated, or a
        tolerated suspension as long as the session timeout by this process's clock."""
        with self._changed:
            while not self._lost.is_set():
                since = self._suspended_since
                if since is None or not self._tolerate_suspended:
                    self._changed.wait()
                    continue
                remaining_s = since + self._session_timeout_ms / 1000 - self._clock()
                if remaining_s <= 0:
                    logger.error(
                        "ZooKeeper connection SUSPENDED for the session timeout (%d ms by this "
                        "master's clock): giving up leadership, as the session has likely "
                        "expired; jobs resume under the next leader, and this master contends "
                        "again once connected",
                        self._session_timeout_ms,
                    )
                    self._lost.set()
                    return
                self._changed.wait(min(remaining_s, _SUSPENSION_CHECK_S))

    def _on_connection_state(self, state: str) -> None:
        """kazoo's thread: flags and events only, one log line per change."""
        with self._lock:
            leading = self._token is not None
            listeners: list[Callable[[bool], None]] = []
            was_suspended = self._suspended
            new_session = False
            if state == "SUSPENDED":
                self._suspended = True
                self._suspended_since = self._clock()
                if leading and self._tolerate_suspended:
                    listeners = list(self._suspend_listeners)
                elif leading:
                    self._lost.set()
            elif state == "LOST":
                # The next CONNECTED is a new session: nothing resumes, the latch
                # contends again (leadership stays in doubt until it is given up).
                self._session_replaced = True
                self._lost.set()
            else:  # CONNECTED
                self._suspended = False
                self._suspended_since = None
                if self._session_replaced:
                    self._session_replaced = False
                    new_session = True
                elif leading and was_suspended:
                    listeners = list(self._suspend_listeners)
            self._changed.notify_all()
        if state == "CONNECTED":
            self._connected.set()
        else:
            self._connected.clear()
        if state == "SUSPENDED":
            self._log_suspended(leading)
        elif state == "LOST":
            logger.error(
                "ZooKeeper session LOST: %s",
                "giving up leadership; jobs resume under the next leader"
                if leading
                else "contending again once connected",
            )
        elif new_session:
            logger.info("ZooKeeper connected again with a new session: contending again")
        elif was_suspended and leading:
            logger.info("ZooKeeper connection back with the session intact: leaders resume")
        elif was_suspended:
            logger.info("ZooKeeper connection back with the session intact")
        if listeners:
            # Not on kazoo's thread: a hook may wait for a lock held by a thread that
            # waits for a ZooKeeper reply, and replies come in on kazoo's thread.
            self._events.submit(_notify, listeners, state == "SUSPENDED")

    def _log_suspended(self, leading: bool) -> None:
        if not leading:
            logger.warning("ZooKeeper connection SUSPENDED: waiting until it is back")
        elif self._tolerate_suspended:
            logger.warning(
                "ZooKeeper connection SUSPENDED: leaders suspend (no checkpoint completes) "
                "until it is back, the session expires, or %d ms pass by this master's clock",
                self._session_timeout_ms,
            )
        else:
            logger.error(
                "ZooKeeper connection SUSPENDED: giving up leadership (%s: false), as the "
                "session may expire and a standby lead at any moment; jobs resume under the "
                "next leader, and this master contends again once connected",
                _TOLERATE_KEY,
            )


def _notify(listeners: list[Callable[[bool], None]], suspended: bool) -> None:
    for listener in listeners:
        listener(suspended)
