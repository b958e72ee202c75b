"""One TCP data connection as the I/O thread sees it: socket, frame decoder, output
buffers and, with ``security.ssl.internal.enabled``, its TLS session (Netty's channel).

A ``Connection`` moves bytes and nothing else: ``read`` receives once and hands whole
frames to its owner, ``flush`` sends what the owner queued in ``out``. Which frames mean
what is its owner's affair: the consumer side (``partition_request_client``) or the
producer side (``partition_request_server``), which registers it with ``register`` and
is told through ``on_lost`` when sending fails. Everything here runs on the network I/O
thread (``event_loop``) alone.
"""

from __future__ import annotations

import logging
import selectors
import socket
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

from weir.core.errors import NetworkError
from weir.taskmanager.network.frames import Frame, FrameDecoder

logger = logging.getLogger(__name__)

HIGH_WATER = 1024 * 1024
"""Stop filling a connection's output buffer past this many bytes until the socket
drains: enough to keep the kernel's send buffer full at 32 KiB frames, small enough that
one busy connection cannot starve the others served by the same loop."""

TLS_CHUNK = 256 * 1024
"""Plaintext encrypted per SSL write, and ciphertext received per read: TLS records are
16 KiB, so one call covers several 32 KiB frames without copying megabytes at once."""

EventHandler = Callable[[Any, int], None]
"""What the selector calls when a connection's socket is ready: ``(socket, mask)``."""

OwnerT = TypeVar("OwnerT")


class Tls:
    """One side of a TLS session over a non-blocking socket, through memory BIOs: the
    I/O thread moves ciphertext between the socket and the BIOs itself, so TLS fits the
    selector loop with no hidden buffering (an SSLSocket can hold decrypted bytes that
    select() does not report)."""

    __slots__ = ("handshaking", "incoming", "obj", "outgoing", "scratch")

    def __init__(
        self,
        context: ssl.SSLContext,
        *,
        server_side: bool,
        hostname: str,
        scratch: memoryview,
    ) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = context.wrap_bio(
            self.incoming,
            self.outgoing,
            server_side=server_side,
            server_hostname=None if server_side else hostname,
        )
        self.handshaking = True
        self.scratch = scratch
        """Where ciphertext lands from the socket: ``TLS_CHUNK`` bytes shared by every
        connection of one loop, which reads them one at a time."""


def _close_unowned(_reason: str) -> None:
    """``on_lost`` of a connection nobody registered yet: it has no owner to tell."""


class Connection:
    """Socket plus decoder plus output buffers; touched by the I/O thread only."""

    __slots__ = (
        "closed",
        "connected",
        "decoder",
        "host",
        "on_lost",
        "out",
        "peer",
        "raw_out",
        "selector",
        "sock",
        "tls",
        "want_write",
    )

    def __init__(
        self,
        selector: selectors.BaseSelector,
        sock: socket.socket,
        address: tuple[str, int],
        tls: Tls | None,
        decoder: FrameDecoder,
    ) -> None:
        self.selector = selector
        self.sock = sock
        self.host = address[0]
        self.peer = f"{address[0]}:{address[1]}"
        self.tls = tls
        self.decoder = decoder
        # A bytearray rather than a list of buffers: CPython deletes a bytearray's prefix
        # in O(1), and sending one contiguous buffer makes a single syscall per flush.
        self.out = bytearray()
        """Frames for the peer; the owner appends, ``flush`` sends."""
        self.raw_out = bytearray()
        """With TLS: ciphertext waiting for the socket (``out`` holds plaintext)."""
        self.want_write = False
        self.connected = True
        """False while a connection this side opened waits for the peer to accept it."""
        self.closed = False
        """Set first by whoever closes the connection, before it tells anyone."""
        self.on_lost: Callable[[str], None] = _close_unowned
        """The owner's close, called with the reason when sending or TLS fails."""

    @property
    def pending(self) -> int:
        """Bytes queued for the peer, plaintext and ciphertext."""
        return len(self.out) + len(self.raw_out)

    def register(self, on_event: EventHandler, on_lost: Callable[[str], None]) -> None:
        """Start watching the socket: ``on_event`` handles its readiness, ``on_lost``
        closes the connection for its owner."""
        self.on_lost = on_lost
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.want_write else 0)
        self.selector.register(self.sock, events, on_event)

    def close(self) -> None:
        """Stop watching the socket and close it; the owner forgets the connection."""
        self.closed = True
        try:
            self.selector.unregister(self.sock)
        except (KeyError, ValueError):
            pass  # already unregistered by an earlier failure path
        self.sock.close()
        self.decoder.close()

    def broken(self, exc: Exception) -> str:
        """Say why this connection's event raised ``exc``, once, and return the reason
        for closing it: a DataProtocolError (or another NetworkError) says what its peer
        did wrong; anything else is an error of ours that this peer's data ran into,
        logged with its traceback. Either way only this connection goes: the thread
        serves every other connection of the TaskManager."""
        unexpected = not isinstance(exc, NetworkError)
        reason = f"unexpected error: {exc!r}" if unexpected else str(exc)
        logger.warning(
            "closing the data connection with %s: %s", self.peer, reason, exc_info=unexpected
        )
        return reason

    # -- reading ---------------------------------------------------------------------

    def read(self, dispatch: Callable[[OwnerT, list[Frame]], None], owner: OwnerT) -> bool:
        """Receive once and hand whole frames to ``dispatch(owner, frames)``; False once
        the peer is gone. Raises DataProtocolError for bytes the protocol does not allow."""
        if self.tls is not None:
            return self._read_tls(self.tls, dispatch, owner)
        try:
            count = self.sock.recv_into(self.decoder.writable())
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            logger.debug("receive from %s failed: %r", self.peer, exc)
            return False
        if count == 0:
            return False
        dispatch(owner, self.decoder.commit(count))
        return not self.closed

    def _read_tls(
        self, tls: Tls, dispatch: Callable[[OwnerT, list[Frame]], None], owner: OwnerT
    ) -> bool:
        scratch = tls.scratch
        try:
            count = self.sock.recv_into(scratch)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            logger.debug("receive from %s failed: %r", self.peer, exc)
            return False
        if count == 0:
            return False
        tls.incoming.write(scratch[:count])
        if tls.handshaking:
            if not self._tls_handshake(tls):
                return False
            self.flush()  # the handshake's own messages
            if self.closed:
                return False
            if tls.handshaking:
                return True
        frames: list[Frame] = []
        decoder = self.decoder
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
            logger.warning("TLS error on the data connection with %s: %s", self.peer, exc)
            return False
        if frames:
            dispatch(owner, frames)
        if not self.closed:
            self.flush()  # what the frames queued, and anything TLS has to say
        return not self.closed

    def _tls_handshake(self, tls: Tls) -> bool:
        """Advance the TLS handshake; False when it failed (logged once, naming the peer)."""
        try:
            tls.obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLError, ssl.CertificateError) as exc:
            logger.warning(
                "TLS handshake on the data connection with %s failed: %s (both sides need "
                "security.ssl.internal.* with certificates of the same CA)",
                self.peer,
                getattr(exc, "verify_message", None) or exc,
            )
            return False
        else:
            tls.handshaking = False
        self.raw_out += tls.outgoing.read()
        return True

    # -- writing ---------------------------------------------------------------------

    def flush(self) -> None:
        """Send what ``out`` holds, as much as the socket takes now; watch for writability
        while anything is left. A failure closes the connection through ``on_lost``."""
        if self.closed:
            return
        connected = self.connected
        tls = self.tls
        if tls is None:
            buffer = self.out
        else:
            buffer = self.raw_out
            if connected and not self._encrypt(tls):
                self.on_lost("the TLS handshake failed")
                return
        if buffer and connected:
            try:
                sent = self.sock.send(buffer)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError as exc:
                logger.debug("send to %s failed: %r", self.peer, exc)
                self.on_lost(f"sending failed: {exc}")
                return
            del buffer[:sent]
        want = bool(buffer) or not connected
        if tls is not None and self.out and not tls.handshaking:
            want = True  # plaintext left behind a full ciphertext buffer
        if want != self.want_write:
            self.want_write = want
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            selector = self.selector
            selector.modify(self.sock, events, selector.get_key(self.sock).data)

    def _encrypt(self, tls: Tls) -> bool:
        """Move plaintext of ``out`` into ciphertext while ``raw_out`` has room (once the
        handshake is done; until then, advance it). False if the handshake failed."""
        if tls.handshaking:
            if not self._tls_handshake(tls):
                return False
            if tls.handshaking:
                return True
        out = self.out
        while out and len(self.raw_out) < HIGH_WATER:
            with memoryview(out) as view, view[:TLS_CHUNK] as chunk:
                written = tls.obj.write(chunk)
            del out[:written]
            self.raw_out += tls.outgoing.read()
        return True
