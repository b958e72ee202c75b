"""The data plane's wire format: length-prefixed binary frames and their incremental decoder.

Every frame is a fixed 14-byte header followed by a payload::

    u32 payload length | u8 frame type | u8 buffer kind | u32 channel id | i32 value | payload

``value`` is the backlog of a BufferResponse, the credits of a PartitionRequest or an
AddCredit, and 0 otherwise. The channel id is chosen by the consuming side and is unique
within its environment, so one TCP connection multiplexes any number of channels.

Everything here reads bytes a peer chose: a decoder returns frames or raises
``DataProtocolError`` (or ``HandshakeError`` for a refused first frame), naming the frame
and what is wrong with it, and never anything else. The connection that received such
bytes is closed; nothing else is touched.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections.abc import Callable
from typing import NamedTuple

from weir.core.config import MAX_FRAME_SIZE_CEILING
from weir.core.deployment import ResultPartitionId
from weir.core.errors import NetworkError
from weir.core.ids import ExecutionAttemptId
from weir.taskmanager.network.api import BufferKind

logger = logging.getLogger(__name__)

HEADER = struct.Struct(">IBBIi")
HEADER_SIZE = HEADER.size

_REQUEST = struct.Struct(">Ii")
"""PartitionRequest payload prefix: subpartition index, edge index; the producer id follows."""

MAX_PRODUCER_ID_BYTES = 256
"""A producer id is an execution attempt id (32 hex digits); anything much longer is not
one."""

MAX_FRAME_PAYLOAD = MAX_FRAME_SIZE_CEILING
"""A larger length can only be a corrupt stream or a peer speaking another protocol: a
sender keeps its frames within ``taskmanager.network.max-frame-size``, which is at most
this (``RecordWriter`` splits buffers, and fails a record that does not fit alone)."""


class FrameType(enum.IntEnum):
    PARTITION_REQUEST = 1
    """Consumer -> producer: start sending a subpartition; value = initial credits."""
    BUFFER_RESPONSE = 2
    """Producer -> consumer: one buffer of a kind; value = backlog left behind it."""
    ADD_CREDIT = 3
    """Consumer -> producer: the channel can take ``value`` more DATA buffers."""
    CANCEL_PARTITION_REQUEST = 4
    """Consumer -> producer: stop sending this channel (the consumer was cancelled)."""
    ERROR_RESPONSE = 5
    """Producer -> consumer: the channel's partition failed; payload is the UTF-8 reason."""
    CLOSE = 6
    """Either side: the connection is being closed on purpose."""
    HANDSHAKE = 7
    """Consumer -> producer, the first frame of every connection: magic, protocol version
    and the cluster's token (``encode_handshake``). Nothing else is read before it."""


PROTOCOL_MAGIC = b"WEIR"
PROTOCOL_VERSION = 1
"""Raised whenever a frame's meaning changes; both ends of a connection must agree."""
_HANDSHAKE = struct.Struct(">4sH")
MAX_HANDSHAKE_PAYLOAD = 4096
"""Until its handshake is checked, a connection may announce no larger frame: a stranger
cannot make the server allocate more than this."""


class DataProtocolError(NetworkError):
    """A peer sent bytes the data protocol does not allow: a frame announcing more than it
    may, of an unknown type or kind, cut short, with a payload or value its type forbids,
    or a frame out of place. The message names the frame and what was wrong."""


_EMPTY_PAYLOAD = frozenset(
    {FrameType.ADD_CREDIT, FrameType.CANCEL_PARTITION_REQUEST, FrameType.CLOSE}
)


def _check_frame(frame_type: FrameType, value: int, length: int) -> None:
    """The rules a frame's header alone can be held to (its payload's contents are its
    decoder's business); raises DataProtocolError."""
    problem = ""
    if frame_type in _EMPTY_PAYLOAD and length:
        problem = f"carries a payload of {length} bytes; it has none"
    elif frame_type == FrameType.ADD_CREDIT and value < 1:
        problem = f"grants {value} credits; an AddCredit grants at least 1"
    elif frame_type == FrameType.PARTITION_REQUEST and value < 0:
        problem = f"grants {value} initial credits; at least 0"
    elif frame_type == FrameType.BUFFER_RESPONSE and value < 0:
        problem = f"announces a backlog of {value} buffers; at least 0"
    if problem:
        msg = f"a {frame_type.name} frame {problem}"
        raise DataProtocolError(msg)


class Frame(NamedTuple):
    frame_type: FrameType
    channel_id: int
    value: int
    kind: BufferKind
    payload: bytes


def encode_header(
    frame_type: FrameType,
    channel_id: int,
    value: int = 0,
    payload_length: int = 0,
    kind: BufferKind = BufferKind.DATA,
) -> bytes:
    return HEADER.pack(payload_length, frame_type, kind, channel_id, value)


def encode_frame(
    frame_type: FrameType,
    channel_id: int,
    value: int = 0,
    payload: bytes = b"",
    kind: BufferKind = BufferKind.DATA,
) -> bytes:
    """One whole frame as bytes (tests and control frames; the hot path writes the header
    and payload into the connection's output buffer separately to avoid a copy)."""
    return HEADER.pack(len(payload), frame_type, kind, channel_id, value) + payload


def encode_partition_request(
    channel_id: int, partition_id: ResultPartitionId, subpartition_index: int, credits: int
) -> bytes:
    body = (
        _REQUEST.pack(subpartition_index, partition_id.edge_index)
        + str(partition_id.producer).encode()
    )
    return encode_frame(FrameType.PARTITION_REQUEST, channel_id, credits, body)


def decode_partition_request(payload: bytes) -> tuple[ResultPartitionId, int]:
    """``(partition_id, subpartition_index)`` of a PartitionRequest payload; raises
    DataProtocolError for one that is not."""
    size = len(payload)
    if size < _REQUEST.size:
        msg = (
            f"a PARTITION_REQUEST frame of {size} bytes: its payload holds at least "
            f"{_REQUEST.size + 1} (subpartition index, edge index, producer id)"
        )
        raise DataProtocolError(msg)
    subpartition_index, edge_index = _REQUEST.unpack_from(payload)
    raw = payload[_REQUEST.size :]
    if not raw or len(raw) > MAX_PRODUCER_ID_BYTES:
        what = "no producer id" if not raw else f"a producer id of {len(raw)} bytes"
        msg = (
            f"a PARTITION_REQUEST frame with {what}; it names the producing execution "
            f"attempt in 1 to {MAX_PRODUCER_ID_BYTES} bytes"
        )
        raise DataProtocolError(msg)
    try:
        producer = ExecutionAttemptId(raw.decode())
    except UnicodeDecodeError as exc:
        msg = f"a PARTITION_REQUEST frame whose producer id is not UTF-8: {exc}"
        raise DataProtocolError(msg) from exc
    return ResultPartitionId(producer, edge_index), subpartition_index


def encode_handshake(token: str) -> bytes:
    body = _HANDSHAKE.pack(PROTOCOL_MAGIC, PROTOCOL_VERSION) + token.encode()
    return encode_frame(FrameType.HANDSHAKE, 0, 0, body)


class HandshakeError(NetworkError):
    """A connection's first frame is not a handshake this server accepts."""


def check_handshake(frame: Frame, token_matches: Callable[[bytes], bool]) -> None:
    """Raises HandshakeError saying what is wrong with a connection's first frame."""
    if frame.frame_type != FrameType.HANDSHAKE:
        msg = (
            f"the first frame is a {frame.frame_type.name} frame, not a handshake; the peer "
            "is not a Weir TaskManager of this version"
        )
        raise HandshakeError(msg)
    if len(frame.payload) < _HANDSHAKE.size:
        msg = (
            f"the HANDSHAKE frame is cut short: {len(frame.payload)} bytes, not the "
            f"{_HANDSHAKE.size} of magic and version at least; the peer is not a Weir "
            "TaskManager of this version"
        )
        raise HandshakeError(msg)
    magic, version = _HANDSHAKE.unpack_from(frame.payload)
    if magic != PROTOCOL_MAGIC:
        msg = f"the handshake's magic is {magic!r}, not {PROTOCOL_MAGIC!r}: not a Weir peer"
        raise HandshakeError(msg)
    if version != PROTOCOL_VERSION:
        msg = (
            f"the peer speaks data protocol version {version}, this TaskManager version "
            f"{PROTOCOL_VERSION}; run the same Weir on every host"
        )
        raise HandshakeError(msg)
    if not token_matches(frame.payload[_HANDSHAKE.size :]):
        msg = "the handshake carried no or a wrong security.auth.token"
        raise HandshakeError(msg)


class FrameDecoder:
    """Turns a byte stream into frames without a per-byte Python loop.

    The connection receives straight into ``writable()`` (``socket.recv_into``) and then
    calls ``commit(n)``; each payload is copied exactly once, out of the receive buffer
    into its own ``bytes``. Not thread-safe: one decoder belongs to one connection.
    """

    def __init__(self, capacity: int = 1024 * 1024, max_payload: int = MAX_FRAME_PAYLOAD) -> None:
        self.max_payload = max_payload
        """The largest payload a frame may announce; a connection raises it once its
        handshake is checked."""
        self._buf = bytearray(capacity)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._need = HEADER_SIZE
        """Bytes the frame at ``_start`` needs in all; grows the buffer for huge frames."""

    def writable(self) -> memoryview:
        """Free space at the end of the buffer, compacting or growing it first if the
        next frame would not fit."""
        if self._start == self._end:
            self._start = self._end = 0
        capacity = len(self._buf)
        if self._start + self._need > capacity or capacity - self._end < HEADER_SIZE:
            pending = self._end - self._start
            if self._need > capacity:
                grown = bytearray(max(self._need, capacity * 2))
                grown[:pending] = self._view[self._start : self._end]
                self._view.release()
                self._buf = grown
                self._view = memoryview(self._buf)
            else:
                self._buf[:pending] = self._view[self._start : self._end]
            self._start, self._end = 0, pending
        return self._view[self._end :]

    def commit(self, count: int) -> list[Frame]:
        """Account for ``count`` bytes received into ``writable()``; return the frames
        now complete, in order. Raises DataProtocolError at the first frame the protocol
        does not allow (the frames before it are lost with the connection)."""
        self._end += count
        frames: list[Frame] = []
        view = self._view
        start, end = self._start, self._end
        unpack = HEADER.unpack_from
        while end - start >= HEADER_SIZE:
            length, frame_type, kind, channel_id, value = unpack(view, start)
            if length > self.max_payload:
                msg = (
                    f"received a frame header announcing {length} bytes (more than "
                    f"{self.max_payload}); the stream is corrupt or the peer is not a Weir "
                    "TaskManager"
                )
                raise DataProtocolError(msg)
            # Judged from the header alone, before waiting for a payload it may not have.
            try:
                known_type, known_kind = FrameType(frame_type), BufferKind(kind)
            except ValueError as exc:
                msg = (
                    f"received an unknown frame (type {frame_type}, kind {kind}); "
                    "the peer speaks another version of the data protocol"
                )
                raise DataProtocolError(msg) from exc
            # The common frames (a buffer with a backlog, a credit of 1 or more) skip
            # the call: this runs once per frame on the I/O thread.
            if (
                value < 0
                or (value == 0 and known_type is FrameType.ADD_CREDIT)
                or (length and known_type in _EMPTY_PAYLOAD)
            ):
                _check_frame(known_type, value, length)
            total = HEADER_SIZE + length
            if end - start < total:
                self._need = total
                break
            payload = bytes(view[start + HEADER_SIZE : start + total]) if length else b""
            frames.append(Frame(known_type, channel_id, value, known_kind, payload))
            start += total
        else:
            self._need = HEADER_SIZE
        self._start = start
        return frames

    def feed(self, data: bytes) -> list[Frame]:
        """Decode ``data`` (any split of the stream); for callers without a socket."""
        frames: list[Frame] = []
        offset = 0
        while offset < len(data):
            target = self.writable()
            count = min(len(target), len(data) - offset)
            target[:count] = data[offset : offset + count]
            offset += count
            frames.extend(self.commit(count))
        return frames

    def close(self) -> None:
        self._view.release()
