"""Frame encoding and the incremental decoder, without sockets."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weir.core.deployment import ResultPartitionId
from weir.core.errors import NetworkError
from weir.core.ids import ExecutionAttemptId
from weir.taskmanager.network.api import BufferKind
from weir.taskmanager.network.frames import (
    HEADER,
    HEADER_SIZE,
    MAX_FRAME_PAYLOAD,
    Frame,
    FrameDecoder,
    FrameType,
    HandshakeError,
    check_handshake,
    decode_partition_request,
    encode_frame,
    encode_handshake,
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


# --- malformed input -----------------------------------------------------------------------
# Whatever a peer sends, a decoder returns frames or raises one of our NetworkErrors (which
# the connection turns into closing that one connection); never struct.error, IndexError,
# UnicodeDecodeError or ValueError, which would reach the I/O thread.

_SMALL_MAX = 64
_frame_types = st.one_of(st.sampled_from(list(FrameType)), st.integers(0, 255))
_kinds = st.one_of(st.sampled_from(list(BufferKind)), st.integers(0, 255))


@st.composite
def _headers(draw: st.DrawFn) -> bytes:
    """A header with any length (often past the limit), type, kind, channel and value."""
    length = draw(st.one_of(st.integers(0, _SMALL_MAX * 2), st.integers(0, 2**32 - 1)))
    return HEADER.pack(
        length,
        draw(_frame_types),
        draw(_kinds),
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(-(2**31), 2**31 - 1)),
    )


@st.composite
def _frames(draw: st.DrawFn) -> bytes:
    """A frame whose header announces its payload's real length (any type, kind, value)."""
    payload = draw(st.binary(max_size=_SMALL_MAX))
    header = HEADER.pack(
        len(payload),
        draw(_frame_types),
        draw(_kinds),
        draw(st.integers(0, 2**32 - 1)),
        draw(st.integers(-(2**31), 2**31 - 1)),
    )
    return header + payload


_streams = st.lists(
    st.one_of(_frames(), _headers(), st.binary(max_size=_SMALL_MAX)), max_size=8
).map(b"".join)


def _decode_all(stream: bytes, chunk: int) -> list[Frame]:
    """Feed ``stream`` in ``chunk``-sized pieces, then decode each frame's contents as the
    producer and the consumer do; raises whatever a decoder raises."""
    decoder = FrameDecoder(capacity=32, max_payload=_SMALL_MAX)
    frames: list[Frame] = []
    for offset in range(0, len(stream), chunk):
        frames.extend(decoder.feed(stream[offset : offset + chunk]))
    for frame in frames:
        if frame.frame_type == FrameType.PARTITION_REQUEST:
            decode_partition_request(frame.payload)
        elif frame.frame_type == FrameType.HANDSHAKE:
            try:
                check_handshake(frame, lambda token: token == b"t")
            except HandshakeError:
                pass  # refused: the documented outcome of a bad handshake
    return frames


class TestMalformedFrames:
    @settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
    @given(_streams, st.integers(1, 64))
    def test_random_streams_decode_or_raise_a_network_error(self, stream, chunk) -> None:
        try:
            _decode_all(stream, chunk)
        except NetworkError as exc:
            assert str(exc)

    @settings(max_examples=300)
    @given(st.binary(max_size=_SMALL_MAX))
    def test_any_partition_request_payload_decodes_or_raises_a_network_error(self, payload) -> None:
        try:
            decode_partition_request(payload)
        except NetworkError as exc:
            assert "PARTITION_REQUEST" in str(exc)

    @settings(max_examples=300)
    @given(_frame_types, st.binary(max_size=_SMALL_MAX))
    def test_any_first_frame_is_accepted_or_refused_with_a_handshake_error(
        self, frame_type, payload
    ) -> None:
        try:
            frame = FrameDecoder().feed(encode_header(frame_type, 0, 0, len(payload)) + payload)
        except NetworkError:
            return  # an unknown frame type: the decoder refused it already
        try:
            check_handshake(frame[0], lambda token: token == b"t")
        except HandshakeError as exc:
            assert str(exc)

    @settings(max_examples=200)
    @given(st.data())
    def test_a_truncated_stream_yields_the_whole_frames_before_the_cut(self, data) -> None:
        pid = ResultPartitionId(ExecutionAttemptId("ab" * 16), 1)
        whole = [
            encode_handshake("t"),
            encode_partition_request(7, pid, 2, 4),
            encode_frame(FrameType.ADD_CREDIT, 7, 3),
            encode_frame(FrameType.BUFFER_RESPONSE, 7, 1, b"payload"),
            encode_frame(FrameType.CLOSE, 0),
        ]
        stream = b"".join(whole)
        cut = data.draw(st.integers(0, len(stream)))
        frames = FrameDecoder().feed(stream[:cut])
        complete = 0
        for frame_bytes in whole:
            if cut < len(frame_bytes):
                break
            cut -= len(frame_bytes)
            complete += 1
        assert len(frames) == complete

    @settings(max_examples=200)
    @given(st.integers(_SMALL_MAX + 1, 2**32 - 1), _frame_types)
    def test_an_oversized_frame_is_refused_from_its_header(self, length, frame_type) -> None:
        decoder = FrameDecoder(capacity=32, max_payload=_SMALL_MAX)
        with pytest.raises(NetworkError, match="announcing"):
            decoder.feed(encode_header(frame_type, 1, 0, length))

    @pytest.mark.parametrize(
        ("payload", "problem"),
        [
            pytest.param(b"", "0 bytes", id="empty"),
            pytest.param(b"\x00\x00", "2 bytes", id="short"),
            pytest.param(b"\x00" * 8, "no producer", id="no-producer"),
            pytest.param(b"\x00" * 8 + b"\xff\xfe", "UTF-8", id="not-utf-8"),
        ],
    )
    def test_a_malformed_partition_request_names_the_frame_and_the_problem(
        self, payload, problem
    ) -> None:
        with pytest.raises(NetworkError, match="PARTITION_REQUEST") as info:
            decode_partition_request(payload)
        assert problem in str(info.value)

    def test_a_short_handshake_says_it_is_cut_short(self) -> None:
        (frame,) = FrameDecoder().feed(encode_frame(FrameType.HANDSHAKE, 0, 0, b"WE"))
        with pytest.raises(HandshakeError, match="2 bytes"):
            check_handshake(frame, lambda token: True)
