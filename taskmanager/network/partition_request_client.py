"""The consumer side of the data connections: requests, credit and cancels for remote
input channels, and the frames that answer them (Flink's ``PartitionRequestClient`` and
``CreditBasedPartitionRequestClientHandler``).

One connection is opened per producer environment, on the first request for one of its
partitions, and every channel reading from it is multiplexed on it by the consumer's
channel id; the handshake is its first frame. Buffers that arrive go to each channel's
gate, one batch per gate per receive. A channel whose producer's task failed gets that
failure (``ProducerFailedError``); a channel whose connection fails, or that cannot
connect at all, fails over with a ``NetworkError`` naming the producer's TaskManager.
Everything here runs on the network I/O thread.
"""

from __future__ import annotations

import errno
import logging
import selectors
import socket
from typing import Any

from weir.core.errors import NetworkError, ProducerFailedError
from weir.core.security import SecurityConfig
from weir.taskmanager.network.api import BufferKind
from weir.taskmanager.network.connection import Connection, EventHandler
from weir.taskmanager.network.event_loop import NetworkEventLoop
from weir.taskmanager.network.frames import (
    DataProtocolError,
    Frame,
    FrameType,
    encode_frame,
    encode_handshake,
    encode_partition_request,
)
from weir.taskmanager.network.input_channel import RemoteInputChannel
from weir.taskmanager.network.input_gate import DefaultInputGate, RemoteBuffer

logger = logging.getLogger(__name__)


class _ClientConnection:
    """What the consumer side keeps of its connection to one producer environment."""

    __slots__ = ("address", "channels", "conn")

    def __init__(self, conn: Connection, address: tuple[str, int]) -> None:
        self.conn = conn
        self.address = address
        self.channels: dict[int, RemoteInputChannel] = {}
        """The channels reading over this connection, by channel id."""


class PartitionRequestClient:
    """Reads this environment's remote input channels from their producers."""

    def __init__(self, loop: NetworkEventLoop, security: SecurityConfig) -> None:
        self._loop = loop
        self._handshake = encode_handshake(security.token)
        self._clients: dict[tuple[str, int], _ClientConnection] = {}
        """The open connections, by producer data server address."""

    # -- what the commands of task threads do ------------------------------------------

    def send_request(self, channel: RemoteInputChannel) -> None:
        location = channel.descriptor.producer_location
        address = (location.host, location.data_port)
        client = self._clients.get(address)
        if client is None:
            client = self._connect(address, channel)
            if client is None:
                return
        client.channels[channel.channel_id] = channel
        conn = client.conn
        conn.out += encode_partition_request(
            channel.channel_id,
            channel.descriptor.partition_id,
            channel.descriptor.subpartition_index,
            channel.credit.exclusive,
        )
        conn.flush()

    def announce_credits(self, credits: dict[RemoteInputChannel, int]) -> None:
        """Send each channel's new credit, summed since the last call, in one flush per
        connection."""
        touched: set[Connection] = set()
        for channel, credit in credits.items():
            client = self._client_of(channel)
            if client is not None:
                conn = client.conn
                conn.out += encode_frame(FrameType.ADD_CREDIT, channel.channel_id, credit)
                touched.add(conn)
        for conn in touched:
            conn.flush()

    def cancel(self, channel: RemoteInputChannel) -> None:
        client = self._client_of(channel)
        if client is None:
            return
        del client.channels[channel.channel_id]
        conn = client.conn
        conn.out += encode_frame(FrameType.CANCEL_PARTITION_REQUEST, channel.channel_id)
        conn.flush()

    def close_all(self, reason: str) -> None:
        """Close every connection, failing its channels with ``reason``."""
        for client in list(self._clients.values()):
            self._close(client, reason)

    def _client_of(self, channel: RemoteInputChannel) -> _ClientConnection | None:
        location = channel.descriptor.producer_location
        client = self._clients.get((location.host, location.data_port))
        if client is None or client.channels.get(channel.channel_id) is not channel:
            return None
        return client

    def _connect(
        self, address: tuple[str, int], channel: RemoteInputChannel
    ) -> _ClientConnection | None:
        try:
            conn = self._loop.connect(address)
        except NetworkError as exc:  # no socket or no route: this channel fails, we serve on
            self._fail_channel(channel, str(exc))
            return None
        client = _ClientConnection(conn, address)
        conn.out += self._handshake  # the first frame, before any request

        def on_lost(reason: str) -> None:
            self._close(client, reason)

        conn.register(self._on_event(client), on_lost)
        self._clients[address] = client
        logger.debug("opened a data connection to %s", conn.peer)
        return client

    # -- frames from producers -------------------------------------------------------

    def _on_event(self, client: _ClientConnection) -> EventHandler:
        conn = client.conn

        def handle(sock: Any, mask: int) -> None:
            try:
                handle_event(sock, mask)
            except Exception as exc:  # one connection's trouble: see Connection.broken
                self._close(client, conn.broken(exc), logged=True)

        def handle_event(sock: Any, mask: int) -> None:
            if not conn.connected and mask & selectors.EVENT_WRITE:
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self._close(client, f"cannot connect: {errno.errorcode.get(err, err)}")
                    return
                conn.connected = True
                conn.flush()  # the handshake (TLS, then Weir's) goes out now
                if conn.closed:
                    return
            if mask & selectors.EVENT_READ and not conn.read(self._on_frames, client):
                self._close(client, "the producer closed the connection")
                return
            if mask & selectors.EVENT_WRITE and not conn.closed:
                conn.flush()

        return handle

    def _on_frames(self, client: _ClientConnection, frames: list[Frame]) -> None:
        # Buffers of one receive are handed to each gate in one batch: one lock
        # acquisition and at most one wakeup of the task per gate, not per buffer.
        batches: dict[DefaultInputGate, list[RemoteBuffer]] = {}
        conn = client.conn
        channels = client.channels
        for frame in frames:
            if conn.closed:
                return
            if frame.frame_type != FrameType.BUFFER_RESPONSE:
                self._deliver(batches)  # keep buffers ahead of a later error in order
                self._on_frame(client, frame)
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

    def _on_frame(self, client: _ClientConnection, frame: Frame) -> None:
        frame_type = frame.frame_type
        if frame_type == FrameType.ERROR_RESPONSE and frame.channel_id == 0:
            # Channel 0 is the connection itself: the producer refused our handshake.
            reason = frame.payload.decode(errors="replace")
            self._close(client, f"the producer's TaskManager refused the connection: {reason}")
        elif frame_type == FrameType.ERROR_RESPONSE:
            channel = client.channels.pop(frame.channel_id, None)
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
            self._close(client, "the producer closed the connection")
        else:
            msg = f"a {frame_type.name} frame, which a producer never sends to a consumer"
            raise DataProtocolError(msg)

    # -- failing channels ------------------------------------------------------------

    def _fail_channel(self, channel: RemoteInputChannel, reason: str) -> None:
        gate = channel.gate
        if gate is None:
            return
        msg = (
            f"cannot read {channel.describe()}: {reason}; the producer's TaskManager is "
            "unreachable or was lost, so the consuming task must fail over"
        )
        gate.on_remote_error(channel, NetworkError(msg))

    def _close(self, client: _ClientConnection, reason: str, *, logged: bool = False) -> None:
        """Close ``client``'s connection and fail its channels; ``logged``: the caller
        already said why."""
        conn = client.conn
        if conn.closed:
            return
        conn.closed = True
        if self._clients.get(client.address) is client:
            del self._clients[client.address]
        conn.close()
        channels = list(client.channels.values())
        client.channels.clear()
        if channels and not logged:
            logger.warning(
                "lost the data connection to %s with %d channel(s) open: %s",
                conn.peer,
                len(channels),
                reason,
            )
        for channel in channels:
            self._fail_channel(channel, f"lost the connection to {conn.peer} ({reason})")
