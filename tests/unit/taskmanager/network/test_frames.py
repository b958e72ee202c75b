"""Frame encoding and the incremental decoder, without sockets."""

from __future__ import annotations

import pytest

from weir.core.deployment import ResultPartitionId
from weir.core.errors import NetworkError
from weir.core.ids import ExecutionAttemptId
from weir.taskmanager.network.api import BufferKind
from weir.taskmanager.network.frames import (
    HEADER_SIZE,
    MAX_FRAME_PAYLOAD,
    FrameDecoder,
    FrameType,
    decode_partition_request,
    encode_frame,
    encode_header,
    encode_partition_request,
)


class TestFrameDecoder:
    def test_round_trips_every_frame_type(self) -> None:
        stream = b"".join(
            [
                encode_frame(FrameType.BUFFER_RESPONSE, 7, 3, b"payload", BufferKind.DATA),
                encode_frame(FrameType.BUFFER_RESPONSE, 7, 0, b"wm", BufferKind.EVENT),
                encode_frame(FrameType.BUFFER_RESPONSE, 7, 0, b"", BufferKind.END_OF_PARTITION),
                encode_frame(FrameType.ADD_CREDIT, 9, 5),
                encode_frame(FrameType.CANCEL_PARTITION_REQUEST, 9),
                encode_frame(FrameType.ERROR_RESPONSE, 9, 0, b"boom"),
                encode_frame(FrameType.CLOSE, 0),
            ]
        )
        frames = FrameDecoder().feed(stream)
        assert [(f.frame_type, f.channel_id, f.value, f.kind, f.payload) for f in frames] == [
            (FrameType.BUFFER_RESPONSE, 7, 3, BufferKind.DATA, b"payload"),
            (FrameType.BUFFER_RESPONSE, 7, 0, BufferKind.EVENT, b"wm"),
            (FrameType.BUFFER_RESPONSE, 7, 0, BufferKind.END_OF_PARTITION, b""),
            (FrameType.ADD_CREDIT, 9, 5, BufferKind.DATA, b""),
            (FrameType.CANCEL_PARTITION_REQUEST, 9, 0, BufferKind.DATA, b""),
            (FrameType.ERROR_RESPONSE, 9, 0, BufferKind.DATA, b"boom"),
            (FrameType.CLOSE, 0, 0, BufferKind.DATA, b""),
        ]

    def test_reassembles_frames_split_at_every_byte(self) -> None:
        payloads = [bytes([i]) * (i * 37) for i in range(20)]
        stream = b"".join(
            encode_frame(FrameType.BUFFER_RESPONSE, i, i, p) for i, p in enumerate(payloads)
        )
        decoder = FrameDecoder(capacity=64)
        frames = []
        for offset in range(len(stream)):
            frames.extend(decoder.feed(stream[offset : offset + 1]))
        assert [f.payload for f in frames] == payloads
        assert [f.channel_id for f in frames] == list(range(20))

    def test_grows_its_buffer_for_frames_larger_than_it(self) -> None:
        big = bytes(range(256)) * 1024  # 256 KiB
        stream = encode_frame(FrameType.BUFFER_RESPONSE, 1, 0, big) * 3
        decoder = FrameDecoder(capacity=4096)
        frames = []
        for offset in range(0, len(stream), 10_000):
            frames.extend(decoder.feed(stream[offset : offset + 10_000]))
        assert [f.payload for f in frames] == [big, big, big]

    def test_commit_after_recv_into(self) -> None:
        frame = encode_frame(FrameType.ADD_CREDIT, 3, 2)
        decoder = FrameDecoder()
        target = decoder.writable()
        target[: len(frame)] = frame
        assert decoder.commit(len(frame))[0].value == 2

    def test_rejects_an_absurd_length(self) -> None:
        header = encode_header(FrameType.BUFFER_RESPONSE, 1, 0, MAX_FRAME_PAYLOAD + 1)
        with pytest.raises(NetworkError, match="corrupt"):
            FrameDecoder().feed(header)

    def test_rejects_an_unknown_frame_type(self) -> None:
        frame = bytearray(encode_frame(FrameType.CLOSE, 0))
        frame[4] = 99
        with pytest.raises(NetworkError, match="unknown frame"):
            FrameDecoder().feed(bytes(frame))

    def test_header_is_fourteen_bytes(self) -> None:
        assert HEADER_SIZE == 14
        assert len(encode_frame(FrameType.CLOSE, 0)) == HEADER_SIZE


class TestPartitionRequest:
    def test_round_trips_partition_subpartition_and_credit(self) -> None:
        pid = ResultPartitionId(ExecutionAttemptId("ab" * 16), 3)
        (frame,) = FrameDecoder().feed(encode_partition_request(42, pid, 5, 2))
        assert frame.frame_type == FrameType.PARTITION_REQUEST
        assert (frame.channel_id, frame.value) == (42, 2)
        assert decode_partition_request(frame.payload) == (pid, 5)
