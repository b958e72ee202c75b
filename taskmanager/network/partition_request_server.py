"""The producer side of the data connections: partition requests, the subpartitions they
read, and the pump that writes their buffers (Flink's ``PartitionRequestServerHandler``
and ``PartitionRequestQueue``).

A consumer's first frame must be a handshake of this protocol version with the cluster's
token; until then its connection is held to the caps of the event loop. After it, each
PARTITION_REQUEST attaches a ``_Reader`` to a subpartition once its partition is
registered; ADD_CREDIT lets the reader send that many more buffers, CANCEL detaches it.
A reader whose subpartition has buffers and credit waits in its connection's queue, and
the pump moves queued buffers into the output buffer up to ``HIGH_WATER``, round by
round. What a consumer asks that cannot be served (no such subpartition, one already
read, a released partition) goes back to it as an ERROR_RESPONSE for that channel alone;
a frame the protocol does not allow closes its connection. Everything here runs on the
network I/O thread, except the partition's callbacks, which post to it.
"""

from __future__ import annotations

import logging
import selectors
from collections import deque
from collections.abc import Callable
from typing import Any

from weir.core.deployment import ResultPartitionId
from weir.core.security import SecurityConfig
from weir.taskmanager.network.api import BufferKind
from weir.taskmanager.network.connection import HIGH_WATER, Connection, EventHandler
from weir.taskmanager.network.event_loop import NetworkEventLoop
from weir.taskmanager.network.frames import (
    HEADER,
    DataProtocolError,
    Frame,
    FrameType,
    HandshakeError,
    check_handshake,
    decode_partition_request,
    encode_frame,
)
from weir.taskmanager.network.result_partition import (
    PartitionReleasedError,
    ResultPartition,
    SubpartitionInUseError,
)
from weir.taskmanager.network.result_partition_manager import ResultPartitionManager
from weir.taskmanager.network.subpartition import SubpartitionView

logger = logging.getLogger(__name__)

_PUMP_ROUNDS = 8
"""Fill-and-send rounds per loop iteration before reads get their turn again."""


class _ServerConnection:
    """What the producer side keeps of one consumer environment's connection."""

    __slots__ = ("authenticated", "available", "conn", "readers")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
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


class PartitionRequestServer:
    """Serves this environment's partitions to the consumers that connect to it."""

    def __init__(
        self,
        loop: NetworkEventLoop,
        partitions: ResultPartitionManager,
        security: SecurityConfig,
    ) -> None:
        self._loop = loop
        self._post = loop.post
        self._partitions = partitions
        self._token_matches = security.token_matches
        self._connections: set[_ServerConnection] = set()
        self._pumping: set[_ServerConnection] = set()
        """Connections with readers queued: the pump visits them, and only them."""

    # -- what the event loop calls ---------------------------------------------------

    def accepted(self, conn: Connection) -> None:
        server = _ServerConnection(conn)

        def on_lost(_reason: str) -> None:
            self._close(server)

        conn.register(self._on_event(server), on_lost)
        self._connections.add(server)
        logger.debug("accepted a data connection from %s", conn.peer)

    def close_all(self) -> None:
        for server in list(self._connections):
            self._close(server)

    def queue_reader(self, reader: _Reader) -> None:
        """``reader``'s subpartition became readable (the ``available`` command)."""
        if not reader.closed:
            reader.conn.available.append(reader)
            self._pumping.add(reader.conn)

    def attach_reader(self, reader: _Reader, partition: ResultPartition) -> None:
        """The partition ``reader`` asked for is registered (the ``ready`` command)."""
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
            logger.warning("refused a partition request from %s: %s", reader.conn.conn.peer, exc)
            self._send_error(reader.conn, reader, str(exc))
            return
        if readable:
            self.queue_reader(reader)

    def pump(self) -> bool:
        """Move readable subpartitions into their connections' output buffers; True while
        some are left queued (a full round, or a connection past its high-water mark)."""
        pumping = self._pumping
        for server in list(pumping):
            conn = server.conn
            header = HEADER.pack
            out = conn.out
            available = server.available
            for _ in range(_PUMP_ROUNDS):
                while available and len(out) + len(conn.raw_out) < HIGH_WATER:
                    reader = available.popleft()
                    if reader.closed:
                        continue
                    partition = reader.view.partition
                    assert isinstance(partition, ResultPartition)
                    try:
                        polled = partition.poll(reader.view)
                    except PartitionReleasedError as exc:
                        self._send_error(server, reader, str(exc))
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
                conn.flush()
                if conn.closed or not available or conn.pending >= HIGH_WATER:
                    break
            if conn.closed or not available:
                pumping.discard(server)
        return bool(pumping)

    # -- frames from consumers -------------------------------------------------------

    def _on_event(self, server: _ServerConnection) -> EventHandler:
        conn = server.conn

        def handle(_sock: Any, mask: int) -> None:
            try:
                if mask & selectors.EVENT_READ and not conn.read(self._on_frames, server):
                    self._close(server)
                    return
                if mask & selectors.EVENT_WRITE:
                    conn.flush()
            except Exception as exc:  # one connection's trouble: see Connection.broken
                conn.broken(exc)
                self._close(server)

        return handle

    def _on_frames(self, server: _ServerConnection, frames: list[Frame]) -> None:
        conn = server.conn
        for frame in frames:
            if conn.closed:
                return
            if not server.authenticated:
                try:
                    check_handshake(frame, self._token_matches)
                except HandshakeError as exc:
                    logger.warning("refused the data connection from %s: %s", conn.peer, exc)
                    self._refuse(server, str(exc))
                    return
                server.authenticated = True
                self._loop.forget(conn)
                continue
            self._on_frame(server, frame)

    def _refuse(self, server: _ServerConnection, reason: str) -> None:
        """Tell the peer why (best effort: one small frame) and close."""
        conn = server.conn
        conn.out += encode_frame(FrameType.ERROR_RESPONSE, 0, 0, reason.encode())
        conn.flush()
        self._close(server)

    def _on_frame(self, server: _ServerConnection, frame: Frame) -> None:
        frame_type = frame.frame_type
        if frame_type == FrameType.ADD_CREDIT:
            reader = server.readers.get(frame.channel_id)
            if reader is None:
                return
            partition = reader.view.partition
            if isinstance(partition, ResultPartition):
                if partition.add_credit(reader.view, frame.value):
                    self.queue_reader(reader)
            else:
                reader.view.credit += frame.value  # still parked: only this thread sees it
        elif frame_type == FrameType.PARTITION_REQUEST:
            self._on_partition_request(server, frame)
        elif frame_type == FrameType.CANCEL_PARTITION_REQUEST:
            reader = server.readers.get(frame.channel_id)
            if reader is not None:
                self._drop_reader(reader)
        elif frame_type == FrameType.CLOSE:
            self._close(server)
        else:
            msg = (
                f"a {frame_type.name} frame after the handshake; a consumer sends a "
                "producer only partition requests, credits, cancels and CLOSE"
            )
            raise DataProtocolError(msg)

    def _on_partition_request(self, server: _ServerConnection, frame: Frame) -> None:
        partition_id, index = decode_partition_request(frame.payload)
        if frame.channel_id in server.readers:
            msg = (
                f"a PARTITION_REQUEST frame for channel {frame.channel_id}, which this "
                "connection already reads (a consumer numbers its channels once)"
            )
            raise DataProtocolError(msg)
        reader = _Reader(frame.channel_id, server, partition_id, None)  # type: ignore[arg-type]

        def on_view_available(_view: SubpartitionView) -> None:
            self._post(("available", reader))

        def on_ready(partition: ResultPartition) -> None:
            self._post(("ready", reader, partition))

        reader.view = SubpartitionView(index, frame.value, on_view_available)
        reader.on_ready = on_ready
        server.readers[frame.channel_id] = reader
        self._partitions.request(partition_id, on_ready)

    # -- ending readers and connections ------------------------------------------------

    def _send_error(self, server: _ServerConnection, reader: _Reader, message: str) -> None:
        conn = server.conn
        conn.out += encode_frame(FrameType.ERROR_RESPONSE, reader.channel_id, 0, message.encode())
        self._drop_reader(reader)
        conn.flush()

    def _drop_reader(self, reader: _Reader) -> None:
        reader.closed = True
        server = reader.conn
        if server.readers.get(reader.channel_id) is reader:
            del server.readers[reader.channel_id]
        partition = reader.view.partition
        if isinstance(partition, ResultPartition):
            partition.detach(reader.view)
        elif reader.on_ready is not None:
            self._partitions.cancel_request(reader.partition_id, reader.on_ready)

    def _close(self, server: _ServerConnection) -> None:
        conn = server.conn
        if conn.closed:
            return
        conn.closed = True
        self._connections.discard(server)
        self._pumping.discard(server)
        self._loop.forget(conn)
        for reader in list(server.readers.values()):
            self._drop_reader(reader)
        server.available.clear()
        conn.close()
        logger.debug("closed the data connection from %s", conn.peer)
