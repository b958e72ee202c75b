"""The network I/O thread of one environment: a ``selectors`` loop that binds the data
server, accepts, watches every data connection and runs the timers (Netty's event loop).

One thread per environment does every socket operation, as Flink's Netty event loop does,
so task threads never block on a socket. Task threads talk to it through a lock-free
command deque plus a self-pipe wakeup (``post``); producers signal "this subpartition
became readable" the same way, once per transition rather than per buffer. What the
commands mean, and what the frames of a connection mean, belongs to the protocol the loop
carries (``IoHandlers``): ``ConnectionManager`` routes the commands, and the producer
side owns the connections the loop accepts.

Many connections cannot end the thread: those that do not authenticate are closed after
``taskmanager.network.handshake-timeout`` and beyond a cap per peer host and in total
(``connection_admission``), and when ``accept`` fails (out of file descriptors, say) the
server stops accepting for a moment, warns, and tries again. The thread serves every
connection of its TaskManager; if it ends anyway, while nobody closed it, its owner's
fatal error handler hears it once (the TaskManager then stops, so that it is replaced).
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weir.core.errors import NetworkError
from weir.core.security import SecurityConfig
from weir.taskmanager.network.api import FatalErrorHandler
from weir.taskmanager.network.connection import TLS_CHUNK, Connection, Tls
from weir.taskmanager.network.connection_admission import (
    AcceptBackoff,
    AdmissionLimits,
    ConnectionAdmission,
    WarningThrottle,
)
from weir.taskmanager.network.frames import MAX_HANDSHAKE_PAYLOAD, FrameDecoder

logger = logging.getLogger(__name__)

_JOIN_TIMEOUT_S = 10.0
"""How long ``close`` waits for the I/O thread; it only has sockets to close, so this is
far more than it needs and only protects the caller against a bug."""

_ACCEPT_BACKLOG = 128

_PEER_GONE = frozenset(
    getattr(errno, name)
    for name in (
        "ECONNABORTED",
        "ECONNRESET",
        "EPROTO",
        "ENOPROTOOPT",
        "EHOSTDOWN",
        "ENONET",
        "EHOSTUNREACH",
        "EOPNOTSUPP",
        "ENETDOWN",
        "ENETUNREACH",
        "EPERM",
    )
    if hasattr(errno, name)
)
"""``accept`` errors that belong to the connection being accepted, not to the server: the
peer gave up, or a firewall refused it (Linux reports pending network errors of the new
socket through ``accept``, and asks callers to retry at once)."""

_OUT_OF_DESCRIPTORS = frozenset((errno.EMFILE, errno.ENFILE))

Command = tuple[Any, ...]
"""What another thread asks of the I/O thread: an operation's name, then its arguments."""


@dataclass(frozen=True, slots=True)
class IoHandlers:
    """What the I/O thread calls in the protocol it carries; all on that thread."""

    accepted: Callable[[Connection], None]
    """A connection was accepted: register it (``Connection.register``) and own it. An
    ``OSError`` it raises counts as a failed accept."""
    run_commands: Callable[[deque[Command]], None]
    """Carry out and remove what other threads posted; once per loop iteration."""
    pump: Callable[[], bool]
    """Write what became readable into the connections; True while work is left that
    needs no event, so the loop must not wait for one. Once per loop iteration."""
    fail: Callable[[str], None]
    """The thread failed with this reason: fail every consumer."""
    close_connections: Callable[[], None]
    """The thread ends: close every connection."""


class NetworkEventLoop:
    """Owns the I/O thread, its selector, the data server and the command deque."""

    def __init__(
        self,
        resource_id: str,
        host: str,
        security: SecurityConfig,
        ports: tuple[int, int],
        limits: AdmissionLimits,
    ) -> None:
        self._resource_id = resource_id
        self._host = host
        self._security = security
        self._ports = ports
        self._server_context = security.data_server_context()
        self._client_context = security.data_client_context()
        self._scratch = memoryview(bytearray(TLS_CHUNK))
        self._selector = selectors.DefaultSelector()
        self._commands: deque[Command] = deque()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_pending = False
        self._server: socket.socket | None = None
        self._handlers: IoHandlers | None = None
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._stopping = False
        self._on_fatal_error: FatalErrorHandler | None = None
        self._admission: ConnectionAdmission[Connection] = ConnectionAdmission(limits)
        self._accept_backoff = AcceptBackoff()
        self._accept_resume_at: float | None = None
        """While accepting is paused: when to start again (``time.monotonic()``)."""
        self._warnings: dict[str, WarningThrottle] = {}
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, handlers: IoHandlers, on_fatal_error: FatalErrorHandler | None) -> int:
        """Bind the data server and start the I/O thread; returns the port. Should the
        thread ever end while ``close`` was not called, ``on_fatal_error(reason)`` is
        called once, on that thread, after its sockets are closed."""
        if self._thread is not None:
            msg = "the network environment was already started"
            raise NetworkError(msg)
        self._on_fatal_error = on_fatal_error
        server = self._bind_server()
        self._server = server
        self._handlers = handlers
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._on_wake)
        self._selector.register(server, selectors.EVENT_READ, self._on_accept)
        port = int(server.getsockname()[1])
        self._thread = threading.Thread(
            target=self._run, name=f"weir-network-io-{self._resource_id[:8]}", daemon=True
        )
        self._thread.start()
        logger.info("data server of %s listening on %s:%d", self._resource_id, self._host, port)
        return port

    def _bind_server(self) -> socket.socket:
        """The listening socket on the first free port of the range (any port for 0)."""
        first, last = self._ports
        error: OSError | None = None
        for port in range(first, last + 1):
            server = socket.socket(socket.AF_INET6 if ":" in self._host else socket.AF_INET)
            # A fixed port stays bindable while the connections a former data server on it
            # closed linger in TIME_WAIT (a minute): a TaskManager that replaces a killed
            # one in the same pod binds it at once, as a JVM's server socket would.
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                server.bind((self._host, port))
                server.listen(_ACCEPT_BACKLOG)
                server.setblocking(False)
            except OSError as exc:
                server.close()
                error = exc
                continue
            return server
        where = f"port {first}" if first == last else f"ports {first}-{last}"
        msg = (
            f"cannot bind the data server on {self._host!r}, {where}: {error}; check "
            "taskmanager.bind-host and taskmanager.data.port (a range of free ports)"
        )
        raise NetworkError(msg) from error

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        thread = self._thread
        if thread is None:
            self._teardown()  # never started: no thread owns the sockets
            return
        self._stopping = True
        self._wake()
        if thread is not threading.current_thread():
            # The thread closes its own sockets on the way out (see ``_run``).
            thread.join(_JOIN_TIMEOUT_S)
            if thread.is_alive():
                logger.warning("network I/O thread of %s did not stop", self._resource_id)

    # -- thread-safe ----------------------------------------------------------------

    def post(self, command: Command) -> None:
        """Queue ``command`` for ``IoHandlers.run_commands`` on the I/O thread."""
        self._commands.append(command)
        if threading.get_ident() != self._thread_id:
            self._wake()

    def _wake(self) -> None:
        # One wakeup byte per batch of commands: the I/O thread clears the flag before
        # draining, so a command posted after the drain always writes a new byte.
        if not self._wake_pending:
            self._wake_pending = True
            try:
                self._wake_w.send(b"\0")
            except (BlockingIOError, OSError):
                # Full pipe: the loop is already due to wake. Closed: we are shutting down.
                pass

    # -- on the I/O thread -----------------------------------------------------------

    def connect(self, address: tuple[str, int]) -> Connection:
        """A connection to the data server at ``address``, connecting (not registered
        yet). Raises NetworkError when no socket can be opened or the connect fails."""
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:  # out of descriptors: the caller fails its channel
            msg = f"cannot open a socket to {address[0]}:{address[1]}: {exc}"
            raise NetworkError(msg) from exc
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = sock.connect_ex(address)
        if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            msg = f"cannot connect to {address[0]}:{address[1]}: {errno.errorcode.get(err, err)}"
            raise NetworkError(msg)
        tls = None
        if self._client_context is not None:
            tls = Tls(
                self._client_context,
                server_side=False,
                hostname=self._security.data_server_hostname(address[0]),
                scratch=self._scratch,
            )
        conn = Connection(self._selector, sock, address, tls, FrameDecoder())
        conn.connected = err == 0
        conn.want_write = not conn.connected
        return conn

    def forget(self, conn: Connection) -> None:
        """``conn`` authenticated or was closed: its handshake deadline and the caps on
        unauthenticated connections no longer apply to it."""
        self._admission.forget(conn)

    def _run(self) -> None:
        self._thread_id = threading.get_ident()
        handlers = self._handlers
        assert handlers is not None  # set by start, before the thread
        run_commands = handlers.run_commands
        pump = handlers.pump
        commands = self._commands
        admission = self._admission
        busy = False
        cause = "it ended unexpectedly"
        try:
            while not self._stopping:
                # Readers left in a queue by a full round must not wait for an event.
                timeout = 0 if busy else self._until_next_timer()
                for key, mask in self._selector.select(timeout):
                    if self._stopping:
                        break
                    key.data(key.fileobj, mask)
                run_commands(commands)
                busy = pump()
                # Attribute reads only: this runs once per loop iteration.
                if admission.pending or self._accept_resume_at is not None:
                    self._run_timers()
        except Exception as exc:  # the loop must never die silently: fail every consumer
            logger.exception("network I/O thread of %s failed", self._resource_id)
            cause = f"it failed: {exc!r}"
            handlers.fail(f"the network I/O thread failed: {exc!r}")
        finally:
            try:
                self._teardown()
            finally:
                if not self._stopping:
                    self._report_death(f"the network I/O thread of {self._resource_id} {cause}")

    def _report_death(self, reason: str) -> None:
        handler = self._on_fatal_error
        if handler is None:
            return
        try:
            handler(reason)
        except Exception:
            # The thread is ending either way; the handler's own failure is all we can add.
            logger.warning("the fatal error handler of %s failed", self._resource_id, exc_info=True)

    def _teardown(self) -> None:
        if self._handlers is not None:
            self._handlers.close_connections()
        for sock in (self._server, self._wake_r, self._wake_w):
            if sock is not None:
                try:
                    self._selector.unregister(sock)
                except (KeyError, ValueError):
                    pass  # never registered (not started) or already unregistered
                sock.close()
        self._selector.close()

    def _on_wake(self, sock: Any, _mask: int) -> None:
        # Drain first, clear the flag second: a byte sent after the drain must stay in the
        # pipe, or a poster that finds the flag set would never wake us again.
        try:
            while sock.recv(4096):
                pass
        except BlockingIOError:
            pass
        self._wake_pending = False

    # -- accepting, and what connections may do before they authenticate ---------------

    def _on_accept(self, sock: Any, _mask: int) -> None:
        try:
            conn_sock, address = sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._on_accept_error(exc)
            return
        self._accept_backoff.succeeded()
        handlers = self._handlers
        assert handlers is not None  # the server is registered only once they are set
        try:
            conn_sock.setblocking(False)
            conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = None
            if self._server_context is not None:
                tls = Tls(
                    self._server_context, server_side=True, hostname="", scratch=self._scratch
                )
            # A consumer sends only small frames (handshake, requests, credits): the server
            # never allocates more than a handshake's worth for one, whoever connects.
            decoder = FrameDecoder(64 * 1024, MAX_HANDSHAKE_PAYLOAD)
            conn = Connection(self._selector, conn_sock, (address[0], address[1]), tls, decoder)
            handlers.accepted(conn)
        except OSError as exc:  # the kernel is short of memory: as a failed accept
            conn_sock.close()
            self._on_accept_error(exc)
            return
        evicted = self._admission.admit(conn, conn.host, time.monotonic())
        if evicted:
            self._close_over_cap(evicted)

    def _on_accept_error(self, exc: OSError) -> None:
        """Keep serving: a peer that vanished before it was accepted is its own affair;
        anything else (out of descriptors or memory) pauses accepting, since the
        listening socket stays readable and retrying at once would spin this thread."""
        if exc.errno in _PEER_GONE:
            logger.debug("a peer left before its data connection was accepted: %r", exc)
            return
        pause_s = self._accept_backoff.failed()
        now = time.monotonic()
        if self._server is not None and self._accept_resume_at is None:
            self._selector.unregister(self._server)
        self._accept_resume_at = now + pause_s
        more = self._throttle("accept", now)
        if more is None:
            return
        hint = ""
        if exc.errno in _OUT_OF_DESCRIPTORS:
            hint = (
                "; the TaskManager is out of file descriptors: raise its open-file limit "
                "(ulimit -n) or look for a peer holding many connections"
            )
        logger.warning(
            "the data server of %s cannot accept connections: %s; accepting again in %d ms%s%s",
            self._resource_id,
            exc,
            pause_s * 1000,
            hint,
            more,
        )

    def _until_next_timer(self) -> float | None:
        """Seconds until a handshake deadline passes or accepting resumes; None: neither
        is due, the loop may wait for events alone."""
        due = self._admission.next_deadline()
        resume = self._accept_resume_at
        if resume is not None and (due is None or resume < due):
            due = resume
        if due is None:
            return None
        return max(0.0, due - time.monotonic())

    def _run_timers(self) -> None:
        now = time.monotonic()
        resume = self._accept_resume_at
        if resume is not None and now >= resume and self._server is not None:
            self._accept_resume_at = None
            self._selector.register(self._server, selectors.EVENT_READ, self._on_accept)
        expired = self._admission.expired(now)
        if not expired:
            return
        for conn in expired:
            conn.on_lost("it did not authenticate in time")
        more = self._throttle("handshake", now, len(expired))
        if more is not None:
            logger.warning(
                "closed %d data connection(s) from %s that did not authenticate within %d ms "
                "(taskmanager.network.handshake-timeout): a consumer sends its handshake "
                "first, at once%s",
                len(expired),
                _hosts(expired),
                self._admission.limits.handshake_timeout_s * 1000,
                more,
            )

    def _close_over_cap(self, evicted: list[tuple[Connection, str]]) -> None:
        """Close the oldest unauthenticated connections that went over a cap."""
        now = time.monotonic()
        limits = self._admission.limits
        for cap, key, limit in (
            (
                "host",
                "taskmanager.network.max-unauthenticated-connections-per-host",
                limits.max_per_host,
            ),
            ("total", "taskmanager.network.max-unauthenticated-connections", limits.max_total),
        ):
            closed = [conn for conn, reason in evicted if reason == cap]
            if not closed:
                continue
            for conn in closed:
                conn.on_lost(f"too many unauthenticated connections ({key})")
            more = self._throttle(cap, now, len(closed))
            if more is not None:
                logger.warning(
                    "closed %d unauthenticated data connection(s) from %s, the oldest, to stay "
                    "within %s (%d)%s",
                    len(closed),
                    _hosts(closed),
                    key,
                    limit,
                    more,
                )

    def _throttle(self, kind: str, now: float, count: int = 1) -> str | None:
        """None: say nothing now. Otherwise what to add to the WARNING of ``kind`` about
        the events it held back since its last one."""
        throttle = self._warnings.get(kind)
        if throttle is None:
            throttle = self._warnings[kind] = WarningThrottle()
        held_back = throttle.allow(now, count)
        if held_back is None:
            return None
        return f" ({held_back} more since the last such warning)" if held_back else ""


def _hosts(conns: list[Connection]) -> str:
    """The peer hosts of ``conns``, each once, in order."""
    return ", ".join(dict.fromkeys(conn.host for conn in conns))
