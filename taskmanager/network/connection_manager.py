"""TCP transport of one environment: a data server, client connections and the I/O thread.

One thread per environment does every socket operation (a ``selectors`` loop), as
Flink's Netty event loop does, so task threads never block on a socket. Task threads
talk to it through a lock-free command deque plus a self-pipe wakeup; producers signal
"this subpartition became readable" the same way, once per transition rather than per
buffer. One connection is opened per (consumer environment, producer environment) pair
and every channel between them is multiplexed on it by the consumer's channel id.

What one connection brings cannot end the thread: a frame the protocol does not allow
(``DataProtocolError``), or any error that one connection's event runs into, closes that
connection alone with one WARNING naming the peer. Neither can many connections: those
that do not authenticate are closed after ``taskmanager.network.handshake-timeout`` and
beyond a cap per peer host and in total (``connection_admission``), and when ``accept``
fails (out of file descriptors, say) the server stops accepting for a moment, warns, and
tries again. The thread serves every connection of its TaskManager; if it ends anyway,
while nobody closed it, its owner's fatal error handler hears it once (the TaskManager
then stops, so that it is replaced).
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from weir.core.deployment import ResultPartitionId
from weir.core.errors import NetworkError, ProducerFailedError
from weir.core.security import SecurityConfig
from weir.taskmanager.network.api import BufferKind, FatalErrorHandler
from weir.taskmanager.network.connection_admission import (
    AcceptBackoff,
    AdmissionLimits,
    ConnectionAdmission,
    WarningThrottle,
)
from weir.taskmanager.network.frames import (
    HEADER,
    MAX_HANDSHAKE_PAYLOAD,
    DataProtocolError,
    Frame,
    FrameDecoder,
    FrameType,
    HandshakeError,
    check_handshake,
    decode_partition_request,
    encode_frame,
    encode_handshake,
    encode_partition_request,
)
from weir.taskmanager.network.input_channel import RemoteInputChannel
from weir.taskmanager.network.input_gate import DefaultInputGate, RemoteBuffer
from weir.taskmanager.network.result_partition import (
    PartitionReleasedError,
    ResultPartition,
    SubpartitionInUseError,
)
from weir.taskmanager.network.result_partition_manager import ResultPartitionManager
from weir.taskmanager.network.subpartition import SubpartitionView

logger = logging.getLogger(__name__)

_HIGH_WATER = 1024 * 1024
"""Stop filling a connection's output buffer past this many bytes until the socket
drains: enough to keep the kernel's send buffer full at 32 KiB frames, small enough that
one busy connection cannot starve the others served by the same loop."""

_PUMP_ROUNDS = 8
"""Fill-and-send rounds per loop iteration before reads get their turn again."""

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

_TLS_CHUNK = 256 * 1024
"""Plaintext encrypted per SSL write, and ciphertext received per read: TLS records are
16 KiB, so one call covers several 32 KiB frames without copying megabytes at once."""


class _Tls:
    """One side of a TLS session over a non-blocking socket, through memory BIOs: the
    I/O thread moves ciphertext between the socket and the BIOs itself, so TLS fits the
    selector loop with no hidden buffering (an SSLSocket can hold decrypted bytes that
    select() does not report)."""

    __slots__ = ("handshaking", "incoming", "obj", "outgoing")

    def __init__(self, context: ssl.SSLContext, *, server_side: bool, hostname: str) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = context.wrap_bio(
            self.incoming,
            self.outgoing,
            server_side=server_side,
            server_hostname=None if server_side else hostname,
        )
        self.handshaking = True


class _Connection:
    """Socket plus decoder plus output buffer; touched by the I/O thread only."""

    def __init__(
        self, sock: socket.socket, peer: str, tls: _Tls | None, decoder: FrameDecoder
    ) -> None:
        self.sock = sock
        self.peer = peer
        self.tls = tls
        self.decoder = decoder
        # A bytearray rather than a list of buffers: CPython deletes a bytearray's prefix
        # in O(1), and sending one contiguous buffer makes a single syscall per flush.
        self.out = bytearray()
        self.raw_out = bytearray()
        """With TLS: ciphertext waiting for the socket (``out`` holds plaintext)."""
        self.want_write = False
        self.closed = False

    @property
    def pending(self) -> int:
        """Bytes queued for the peer, plaintext and ciphertext."""
        return len(self.out) + len(self.raw_out)


class _ClientConnection(_Connection):
    """Consumer side: receives buffers for the channels this environment requested."""

    def __init__(self, sock: socket.socket, address: tuple[str, int], tls: _Tls | None) -> None:
        super().__init__(sock, f"{address[0]}:{address[1]}", tls, FrameDecoder())
        self.address = address
        self.connected = False
        self.channels: dict[int, RemoteInputChannel] = {}


class _ServerConnection(_Connection):
    """Producer side: sends subpartitions to one consumer environment."""

    def __init__(self, sock: socket.socket, host: str, port: int, tls: _Tls | None) -> None:
        # A consumer sends only small frames (handshake, requests, credits): the server
        # never allocates more than a handshake's worth for one, whoever connects.
        super().__init__(
            sock, f"{host}:{port}", tls, FrameDecoder(64 * 1024, MAX_HANDSHAKE_PAYLOAD)
        )
        self.host = host
        self.readers: dict[int, _Reader] = {}
        self.available: deque[_Reader] = deque()
        self.authenticated = False
        """The first frame was a handshake of this protocol version with the token."""


class _Reader:
    """A requested subpartition on a server connection (Flink's
    ``CreditBasedSequenceNumberingViewReader``)."""

    __slots__ = ("channel_id", "closed", "conn", "on_ready", "partition_id", "view")

    def __init__(
        self,
        channel_id: int,
        conn: _ServerConnection,
        partition_id: ResultPartitionId,
        view: SubpartitionView,
    ) -> None:
        self.channel_id = channel_id
        self.conn = conn
        self.partition_id = partition_id
        self.view = view
        self.closed = False
        self.on_ready: Callable[[ResultPartition], None] | None = None


class ConnectionManager:
    """Owns the I/O thread. Implements the gates' ``RemoteTransport``."""

    def __init__(
        self,
        resource_id: str,
        host: str,
        partitions: ResultPartitionManager,
        security: SecurityConfig | None = None,
        ports: tuple[int, int] = (0, 0),
        *,
        limits: AdmissionLimits | None = None,
    ) -> None:
        self._resource_id = resource_id
        self._host = host
        self._partitions = partitions
        self._security = security or SecurityConfig()
        self._ports = ports
        self._server_context = self._security.data_server_context()
        self._client_context = self._security.data_client_context()
        self._handshake = encode_handshake(self._security.token)
        self._scratch = bytearray(_TLS_CHUNK)
        self._scratch_view = memoryview(self._scratch)
        self._selector = selectors.DefaultSelector()
        self._commands: deque[tuple[Any, ...]] = deque()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._wake_pending = False
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._stopping = False
        self._on_fatal_error: FatalErrorHandler | None = None
        self._clients: dict[tuple[str, int], _ClientConnection] = {}
        self._servers: set[_ServerConnection] = set()
        self._pumping: set[_ServerConnection] = set()
        self._admission: ConnectionAdmission[_ServerConnection] = ConnectionAdmission(
            limits or AdmissionLimits()
        )
        self._accept_backoff = AcceptBackoff()
        self._accept_resume_at: float | None = None
        """While accepting is paused: when to start again (``time.monotonic()``)."""
        self._warnings: dict[str, WarningThrottle] = {}
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, on_fatal_error: FatalErrorHandler | None = None) -> int:
        """Bind the data server and start the I/O thread; returns the port. Should the
        thread ever end while ``close`` was not called, ``on_fatal_error(reason)`` is
        called once, on that thread, after its sockets are closed."""
        if self._thread is not None:
            msg = "the network environment was already started"
            raise NetworkError(msg)
        self._on_fatal_error = on_fatal_error
        server = self._bind_server()
        self._server = server
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

    # -- thread-safe API (task threads, producers) --------------------------------

    def request_partition(self, channel: RemoteInputChannel) -> None:
        self._post(("request", channel))

    def announce_credit(self, channel: RemoteInputChannel, credit: int) -> None:
        self._post(("credit", channel, credit))

    def cancel_request(self, channel: RemoteInputChannel) -> None:
        self._post(("cancel", channel))

    def _post(self, command: tuple[Any, ...]) -> None:
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

    # -- the I/O thread --------------------------------------------------------------

    def _run(self) -> None:
        self._thread_id = threading.get_ident()
        cause = "it ended unexpectedly"
        try:
            while not self._stopping:
                # Readers left in a queue by a full round must not wait for an event.
                timeout = 0 if self._pumping else self._until_next_timer()
                for key, mask in self._selector.select(timeout):
                    if self._stopping:
                        break
                    key.data(key.fileobj, mask)
                self._drain_commands()
                self._pump()
                # Attribute reads only: this runs once per loop iteration.
                if self._admission.pending or self._accept_resume_at is not None:
                    self._run_timers()
        except Exception as exc:  # the loop must never die silently: fail every consumer
            logger.exception("network I/O thread of %s failed", self._resource_id)
            cause = f"it failed: {exc!r}"
            self._fail_all(f"the network I/O thread failed: {exc!r}")
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
        for client in list(self._clients.values()):
            self._close_client(client, "the consumer's network environment was closed")
        for server_conn in list(self._servers):
            self._close_server_conn(server_conn)
        for sock in (self._server, self._wake_r, self._wake_w):
            if sock is not None:
                try:
                    self._selector.unregister(sock)
                except (KeyError, ValueError):
                    pass  # never registered (not started) or already unregistered
                sock.close()
        self._selector.close()

    def _fail_all(self, reason: str) -> None:
        for client in list(self._clients.values()):
            self._close_client(client, reason)

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
        try:
            conn_sock.setblocking(False)
            conn_sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = None
            if self._server_context is not None:
                tls = _Tls(self._server_context, server_side=True, hostname="")
            conn = _ServerConnection(conn_sock, address[0], address[1], tls)
            self._selector.register(conn_sock, selectors.EVENT_READ, self._on_server_event(conn))
        except OSError as exc:  # the kernel is short of memory: as a failed accept
            conn_sock.close()
            self._on_accept_error(exc)
            return
        self._servers.add(conn)
        logger.debug("accepted a data connection from %s", conn.peer)
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
            self._close_server_conn(conn)
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

    def _close_over_cap(self, evicted: list[tuple[_ServerConnection, str]]) -> None:
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
                self._close_server_conn(conn)
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

    def _on_server_event(self, conn: _ServerConnection) -> Callable[[Any, int], None]:
        def handle(_sock: Any, mask: int) -> None:
            try:
                if mask & selectors.EVENT_READ and not self._read(conn, self._on_server_frames):
                    self._close_server_conn(conn)
                    return
                if mask & selectors.EVENT_WRITE:
                    self._flush(conn)
            except Exception as exc:  # one connection's trouble: see _drop_broken
                self._drop_broken(conn, exc)

        return handle

    def _on_client_event(self, conn: _ClientConnection) -> Callable[[Any, int], None]:
        def handle(sock: Any, mask: int) -> None:
            try:
                handle_event(sock, mask)
            except Exception as exc:  # one connection's trouble: see _drop_broken
                self._drop_broken(conn, exc)

        def handle_event(sock: Any, mask: int) -> None:
            if not conn.connected and mask & selectors.EVENT_WRITE:
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self._close_client(conn, f"cannot connect: {errno.errorcode.get(err, err)}")
                    return
                conn.connected = True
                self._flush(conn)  # the handshake (TLS, then Weir's) goes out now
                if conn.closed:
                    return
            if mask & selectors.EVENT_READ and not self._read(conn, self._on_client_frames):
                self._close_client(conn, "the producer closed the connection")
                return
            if mask & selectors.EVENT_WRITE and not conn.closed:
                self._flush(conn)

        return handle

    def _drop_broken(self, conn: _Connection, exc: Exception) -> None:
        """Close a connection whose event raised ``exc``: a DataProtocolError (or another
        NetworkError) says what its peer did wrong; anything else is an error of ours
        that this peer's data ran into, logged with its traceback. Either way only this
        connection goes: the thread serves every other connection of the TaskManager."""
        unexpected = not isinstance(exc, NetworkError)
        reason = f"unexpected error: {exc!r}" if unexpected else str(exc)
        logger.warning(
            "closing the data connection with %s: %s", conn.peer, reason, exc_info=unexpected
        )
        if isinstance(conn, _ClientConnection):
            self._close_client(conn, reason, logged=True)
        elif isinstance(conn, _ServerConnection):
            self._close_server_conn(conn)

    def _read(self, conn: _Connection, dispatch: Callable[[Any, list[Frame]], None]) -> bool:
        """Receive once and dispatch whole frames; False once the peer is gone. Raises
        DataProtocolError for bytes the protocol does not allow."""
        if conn.tls is not None:
            return self._read_tls(conn, conn.tls, dispatch)
        try:
            count = conn.sock.recv_into(conn.decoder.writable())
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            logger.debug("receive from %s failed: %r", conn.peer, exc)
            return False
        if count == 0:
            return False
        dispatch(conn, conn.decoder.commit(count))
        return not conn.closed

    def _read_tls(
        self, conn: _Connection, tls: _Tls, dispatch: Callable[[Any, list[Frame]], None]
    ) -> bool:
        try:
            count = conn.sock.recv_into(self._scratch)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            logger.debug("receive from %s failed: %r", conn.peer, exc)
            return False
        if count == 0:
            return False
        tls.incoming.write(self._scratch_view[:count])
        if tls.handshaking:
            if not self._tls_handshake(conn, tls):
                return False
            self._flush(conn)  # the handshake's own messages
            if conn.closed:
                return False
            if tls.handshaking:
                return True
        frames: list[Frame] = []
        decoder = conn.decoder
        try:
            while True:
                target = decoder.writable()
                try:
                    # With a buffer, read() fills it and returns a count (typeshed
                    # only knows the bytes-returning form).
                    read: int = tls.obj.read(len(target), target)  # type: ignore[assignment]
                except ssl.SSLWantReadError:
                    break
                if read == 0:
                    return False
                frames.extend(decoder.commit(read))
        except ssl.SSLZeroReturnError:
            return False
        except ssl.SSLError as exc:
            logger.warning("TLS error on the data connection with %s: %s", conn.peer, exc)
            return False
        if frames:
            dispatch(conn, frames)
        if not conn.closed:
            self._flush(conn)  # what the frames queued, and anything TLS has to say
        return not conn.closed

    def _tls_handshake(self, conn: _Connection, tls: _Tls) -> bool:
        """Advance the TLS handshake; False when it failed (logged once, naming the peer)."""
        try:
            tls.obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLError, ssl.CertificateError) as exc:
            logger.warning(
                "TLS handshake on the data connection with %s failed: %s (both sides need "
                "security.ssl.internal.* with certificates of the same CA)",
                conn.peer,
                getattr(exc, "verify_message", None) or exc,
            )
            return False
        else:
            tls.handshaking = False
        conn.raw_out += tls.outgoing.read()
        return True

    # -- writing ---------------------------------------------------------------------

    def _flush(self, conn: _Connection) -> None:
        if conn.closed:
            return
        connected = not isinstance(conn, _ClientConnection) or conn.connected
        tls = conn.tls
        if tls is None:
            buffer = conn.out
        else:
            buffer = conn.raw_out
            if connected and not self._encrypt(conn, tls):
                self._close_any(conn, "the TLS handshake failed")
                return
        if buffer and connected:
            try:
                sent = conn.sock.send(buffer)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                logger.debug("send to %s failed: %r", conn.peer, exc)
                self._close_any(conn, f"sending failed: {exc}")
                return
            del buffer[:sent]
        want = bool(buffer) or not connected
        if tls is not None and conn.out and not tls.handshaking:
            want = True  # plaintext left behind a full ciphertext buffer
        if want != conn.want_write:
            conn.want_write = want
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self._selector.modify(conn.sock, events, self._selector.get_key(conn.sock).data)

    def _encrypt(self, conn: _Connection, tls: _Tls) -> bool:
        """Move plaintext of ``conn.out`` into ciphertext while ``raw_out`` has room (once
        the handshake is done; until then, advance it). False if the handshake failed."""
        if tls.handshaking:
            if not self._tls_handshake(conn, tls):
                return False
            if tls.handshaking:
                return True
        out = conn.out
        while out and len(conn.raw_out) < _HIGH_WATER:
            with memoryview(out) as view, view[:_TLS_CHUNK] as chunk:
                written = tls.obj.write(chunk)
            del out[:written]
            conn.raw_out += tls.outgoing.read()
        return True

    def _pump(self) -> None:
        """Move readable subpartitions into their connections' output buffers."""
        for conn in list(self._pumping):
            header = HEADER.pack
            out = conn.out
            available = conn.available
            for _ in range(_PUMP_ROUNDS):
                while available and len(out) + len(conn.raw_out) < _HIGH_WATER:
                    reader = available.popleft()
                    if reader.closed:
                        continue
                    partition = reader.view.partition
                    assert isinstance(partition, ResultPartition)
                    try:
                        polled = partition.poll(reader.view)
                    except PartitionReleasedError as exc:
                        self._send_error(conn, reader, str(exc))
                        continue
                    if polled is None:
                        continue
                    payload = polled.payload
                    out += header(
                        len(payload),
                        FrameType.BUFFER_RESPONSE,
                        polled.kind,
                        reader.channel_id,
                        polled.backlog,
                    )
                    out += payload
                    if polled.kind == BufferKind.END_OF_PARTITION:
                        self._drop_reader(reader)
                    elif polled.more:
                        available.append(reader)
                self._flush(conn)
                if conn.closed or not available or conn.pending >= _HIGH_WATER:
                    break
            if conn.closed or not available:
                self._pumping.discard(conn)

    def _queue_reader(self, reader: _Reader) -> None:
        if not reader.closed:
            reader.conn.available.append(reader)
            self._pumping.add(reader.conn)

    # -- commands from other threads ---------------------------------------------------

    def _drain_commands(self) -> None:
        credits: dict[RemoteInputChannel, int] = {}
        commands = self._commands
        while commands:
            command = commands.popleft()
            op = command[0]
            if op == "available":
                self._queue_reader(command[1])
            elif op == "credit":
                channel = command[1]
                credits[channel] = credits.get(channel, 0) + command[2]
            elif op == "ready":
                self._attach_reader(command[1], command[2])
            elif op == "request":
                self._send_request(command[1])
            elif op == "cancel":
                self._cancel_channel(command[1])
        # AddCredits coalesce per channel: a fast consumer returns credits one buffer at a
        # time, the producer only needs the sum.
        touched: set[_ClientConnection] = set()
        for channel, credit in credits.items():
            conn = self._client_of(channel)
            if conn is not None:
                conn.out += encode_frame(FrameType.ADD_CREDIT, channel.channel_id, credit)
                touched.add(conn)
        for conn in touched:
            self._flush(conn)

    def _client_of(self, channel: RemoteInputChannel) -> _ClientConnection | None:
        location = channel.descriptor.producer_location
        conn = self._clients.get((location.host, location.data_port))
        if conn is None or conn.channels.get(channel.channel_id) is not channel:
            return None
        return conn

    def _send_request(self, channel: RemoteInputChannel) -> None:
        location = channel.descriptor.producer_location
        address = (location.host, location.data_port)
        conn = self._clients.get(address)
        if conn is None:
            conn = self._connect(address, channel)
            if conn is None:
                return
        conn.channels[channel.channel_id] = channel
        conn.out += encode_partition_request(
            channel.channel_id,
            channel.descriptor.partition_id,
            channel.descriptor.subpartition_index,
            channel.credit.exclusive,
        )
        self._flush(conn)

    def _connect(
        self, address: tuple[str, int], channel: RemoteInputChannel
    ) -> _ClientConnection | None:
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError as exc:  # out of descriptors: this channel fails, the thread serves on
            self._fail_channel(channel, f"cannot open a socket to {address[0]}:{address[1]}: {exc}")
            return None
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        err = sock.connect_ex(address)
        if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            self._fail_channel(
                channel,
                f"cannot connect to {address[0]}:{address[1]}: {errno.errorcode.get(err, err)}",
            )
            return None
        tls = None
        if self._client_context is not None:
            tls = _Tls(
                self._client_context,
                server_side=False,
                hostname=self._security.data_server_hostname(address[0]),
            )
        conn = _ClientConnection(sock, address, tls)
        conn.out += self._handshake  # the first frame, before any request
        conn.connected = err == 0
        conn.want_write = not conn.connected
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.want_write else 0)
        self._selector.register(sock, events, self._on_client_event(conn))
        self._clients[address] = conn
        logger.debug("opened a data connection to %s", conn.peer)
        return conn

    def _cancel_channel(self, channel: RemoteInputChannel) -> None:
        conn = self._client_of(channel)
        if conn is None:
            return
        del conn.channels[channel.channel_id]
        conn.out += encode_frame(FrameType.CANCEL_PARTITION_REQUEST, channel.channel_id)
        self._flush(conn)

    # -- consumer side -------------------------------------------------------------------

    def _on_client_frames(self, conn: _ClientConnection, frames: list[Frame]) -> None:
        # Buffers of one receive are handed to each gate in one batch: one lock
        # acquisition and at most one wakeup of the task per gate, not per buffer.
        batches: dict[DefaultInputGate, list[RemoteBuffer]] = {}
        channels = conn.channels
        for frame in frames:
            if conn.closed:
                return
            if frame.frame_type != FrameType.BUFFER_RESPONSE:
                self._deliver(batches)  # keep buffers ahead of a later error in order
                self._on_client_frame(conn, frame)
                continue
            channel = channels.get(frame.channel_id)
            if channel is None:
                continue  # cancelled while the buffer was on its way
            if frame.kind == BufferKind.END_OF_PARTITION:
                del channels[frame.channel_id]
            gate = channel.gate
            if gate is not None:
                batch = batches.get(gate)
                if batch is None:
                    batch = batches[gate] = []
                batch.append((channel, frame.kind, frame.value, frame.payload))
        self._deliver(batches)

    @staticmethod
    def _deliver(batches: dict[DefaultInputGate, list[RemoteBuffer]]) -> None:
        for gate, batch in batches.items():
            gate.on_remote_buffers(batch)
        batches.clear()

    def _on_client_frame(self, conn: _ClientConnection, frame: Frame) -> None:
        frame_type = frame.frame_type
        if frame_type == FrameType.ERROR_RESPONSE and frame.channel_id == 0:
            # Channel 0 is the connection itself: the producer refused our handshake.
            reason = frame.payload.decode(errors="replace")
            self._close_client(conn, f"the producer's TaskManager refused the connection: {reason}")
        elif frame_type == FrameType.ERROR_RESPONSE:
            channel = conn.channels.pop(frame.channel_id, None)
            if channel is not None:
                # The producer's TaskManager answered: its task ended, and reports why.
                reason = frame.payload.decode(errors="replace")
                gate = channel.gate
                if gate is not None:
                    msg = (
                        f"cannot read {channel.describe()}: its producer ended first: {reason}; "
                        "the producer's own failure is the cause, this task fails over with it"
                    )
                    gate.on_remote_error(channel, ProducerFailedError(msg))
        elif frame_type == FrameType.CLOSE:
            self._close_client(conn, "the producer closed the connection")
        else:
            msg = f"a {frame_type.name} frame, which a producer never sends to a consumer"
            raise DataProtocolError(msg)

    def _fail_channel(self, channel: RemoteInputChannel, reason: str) -> None:
        gate = channel.gate
        if gate is None:
            return
        msg = (
            f"cannot read {channel.describe()}: {reason}; the producer's TaskManager is "
            "unreachable or was lost, so the consuming task must fail over"
        )
        gate.on_remote_error(channel, NetworkError(msg))

    def _close_client(self, conn: _ClientConnection, reason: str, *, logged: bool = False) -> None:
        """Close ``conn`` and fail its channels; ``logged``: the caller already said why."""
        if conn.closed:
            return
        conn.closed = True
        if self._clients.get(conn.address) is conn:
            del self._clients[conn.address]
        self._unregister_and_close(conn)
        channels = list(conn.channels.values())
        conn.channels.clear()
        if channels and not logged:
            logger.warning(
                "lost the data connection to %s with %d channel(s) open: %s",
                conn.peer,
                len(channels),
                reason,
            )
        for channel in channels:
            self._fail_channel(channel, f"lost the connection to {conn.peer} ({reason})")

    # -- producer side ------------------------------------------------------------------

    def _on_server_frames(self, conn: _ServerConnection, frames: list[Frame]) -> None:
        for frame in frames:
            if conn.closed:
                return
            if not conn.authenticated:
                try:
                    check_handshake(frame, self._security.token_matches)
                except HandshakeError as exc:
                    logger.warning("refused the data connection from %s: %s", conn.peer, exc)
                    self._refuse(conn, str(exc))
                    return
                conn.authenticated = True
                self._admission.forget(conn)
                continue
            self._on_server_frame(conn, frame)

    def _refuse(self, conn: _ServerConnection, reason: str) -> None:
        """Tell the peer why (best effort: one small frame) and close."""
        conn.out += encode_frame(FrameType.ERROR_RESPONSE, 0, 0, reason.encode())
        self._flush(conn)
        self._close_server_conn(conn)

    def _on_server_frame(self, conn: _ServerConnection, frame: Frame) -> None:
        frame_type = frame.frame_type
        if frame_type == FrameType.ADD_CREDIT:
            reader = conn.readers.get(frame.channel_id)
            if reader is None:
                return
            partition = reader.view.partition
            if isinstance(partition, ResultPartition):
                if partition.add_credit(reader.view, frame.value):
                    self._queue_reader(reader)
            else:
                reader.view.credit += frame.value  # still parked: only this thread sees it
        elif frame_type == FrameType.PARTITION_REQUEST:
            self._on_partition_request(conn, frame)
        elif frame_type == FrameType.CANCEL_PARTITION_REQUEST:
            reader = conn.readers.get(frame.channel_id)
            if reader is not None:
                self._drop_reader(reader)
        elif frame_type == FrameType.CLOSE:
            self._close_server_conn(conn)
        else:
            msg = (
                f"a {frame_type.name} frame after the handshake; a consumer sends a "
                "producer only partition requests, credits, cancels and CLOSE"
            )
            raise DataProtocolError(msg)

    def _on_partition_request(self, conn: _ServerConnection, frame: Frame) -> None:
        partition_id, index = decode_partition_request(frame.payload)
        if frame.channel_id in conn.readers:
            msg = (
                f"a PARTITION_REQUEST frame for channel {frame.channel_id}, which this "
                "connection already reads (a consumer numbers its channels once)"
            )
            raise DataProtocolError(msg)
        reader = _Reader(frame.channel_id, conn, partition_id, None)  # type: ignore[arg-type]

        def on_view_available(_view: SubpartitionView) -> None:
            self._post(("available", reader))

        def on_ready(partition: ResultPartition) -> None:
            self._post(("ready", reader, partition))

        reader.view = SubpartitionView(index, frame.value, on_view_available)
        reader.on_ready = on_ready
        conn.readers[frame.channel_id] = reader
        self._partitions.request(partition_id, on_ready)

    def _attach_reader(self, reader: _Reader, partition: ResultPartition) -> None:
        if reader.closed:
            return
        if reader.view.index >= partition.num_subpartitions:
            self._send_error(
                reader.conn,
                reader,
                f"partition {partition.partition_id} has {partition.num_subpartitions} "
                f"subpartitions; subpartition {reader.view.index} does not exist",
            )
            return
        try:
            readable = partition.attach(reader.view)
        except SubpartitionInUseError as exc:
            logger.warning("refused a partition request from %s: %s", reader.conn.peer, exc)
            self._send_error(reader.conn, reader, str(exc))
            return
        if readable:
            self._queue_reader(reader)

    def _send_error(self, conn: _ServerConnection, reader: _Reader, message: str) -> None:
        conn.out += encode_frame(FrameType.ERROR_RESPONSE, reader.channel_id, 0, message.encode())
        self._drop_reader(reader)
        self._flush(conn)

    def _drop_reader(self, reader: _Reader) -> None:
        reader.closed = True
        conn = reader.conn
        if conn.readers.get(reader.channel_id) is reader:
            del conn.readers[reader.channel_id]
        partition = reader.view.partition
        if isinstance(partition, ResultPartition):
            partition.detach(reader.view)
        elif reader.on_ready is not None:
            self._partitions.cancel_request(reader.partition_id, reader.on_ready)

    def _close_server_conn(self, conn: _ServerConnection) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._servers.discard(conn)
        self._pumping.discard(conn)
        self._admission.forget(conn)
        for reader in list(conn.readers.values()):
            self._drop_reader(reader)
        conn.available.clear()
        self._unregister_and_close(conn)
        logger.debug("closed the data connection from %s", conn.peer)

    def _close_any(self, conn: _Connection, reason: str) -> None:
        if isinstance(conn, _ClientConnection):
            self._close_client(conn, reason)
        elif isinstance(conn, _ServerConnection):
            self._close_server_conn(conn)

    def _unregister_and_close(self, conn: _Connection) -> None:
        conn.closed = True
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass  # already unregistered by an earlier failure path
        conn.sock.close()
        conn.decoder.close()


def _hosts(conns: list[_ServerConnection]) -> str:
    """The peer hosts of ``conns``, each once, in order."""
    return ", ".join(dict.fromkeys(conn.host for conn in conns))
