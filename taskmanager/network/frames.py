"""The data plane's wire format: length-prefixed binary frames and their incremental decoder.

Every frame is a fixed 14-byte header followed by a payload::

    u32 payload length | u8 frame type | u8 buffer kind | u32 channel id | i32 value | payload

``value`` is the backlog of a BufferResponse, the credits of a PartitionRequest or an
AddCredit, and 0 otherwise. The channel id is chosen by the consuming side and is unique
within its environment, so one TCP connection multiplexes any number of channels.
"""

from __future__ import annotations

import enum
import logging
import struct
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
    """``(partition_id, subpartition_index)`` of a PartitionRequest payload."""
    subpartition_index, edge_index = _REQUEST.unpack_from(payload)
    producer = ExecutionAttemptId(payload[_REQUEST.size :].decode())
    return ResultPartitionId(producer, edge_index), subpartition_index


class FrameDecoder:
    """Turns a byte stream into frames without a per-byte Python loop.

    The connection receives straight into ``writable()`` (``socket.recv_into``) and then
    calls ``commit(n)``; each payload is copied exactly once, out of the receive buffer
    into its own ``bytes``. Not thread-safe: one decoder belongs to one connection.
    """

    def __init__(self, capacity: int = 1024 * 1024) -> None:
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
        now complete, in order."""
        self._end += count
        frames: list[Frame] = []
        view = self._view
        start, end = self._start, self._end
        unpack = HEADER.unpack_from
        while end - start >= HEADER_SIZE:
            length, frame_type, kind, channel_id, value = unpack(view, start)
            if length > MAX_FRAME_PAYLOAD:
                msg = (
                    f"received a frame header announcing {length} bytes (more than "
                    f"{MAX_FRAME_PAYLOAD}); the stream is corrupt or the peer is not a Weir "
                    "data server"
                )
                raise NetworkError(msg)
            total = HEADER_SIZE + length
            if end - start < total:
                self._need = total
                break
            payload = bytes(view[start + HEADER_SIZE : start + total]) if length else b""
            try:
                frames.append(
                    Frame(FrameType(frame_type), channel_id, value, BufferKind(kind), payload)
                )
            except ValueError as exc:
                msg = (
                    f"received an unknown frame (type {frame_type}, kind {kind}); "
                    "the peer speaks another version of the data protocol"
                )
                raise NetworkError(msg) from exc
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
