"""A peer that breaks the data protocol loses its own connection, with one WARNING naming
it, and nothing else: the data server keeps accepting, and a real consumer still reads a
real producer afterwards. An I/O thread that dies anyway tells its owner, once."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from weir.core.deployment import (
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskManagerLocation,
)
from weir.core.errors import NetworkError
from weir.core.ids import ExecutionAttemptId, JobVertexId, OperatorId, ResourceId
from weir.core.job_graph import JobEdge, PartitionerKind
from weir.core.security import SecurityConfig
from weir.taskmanager.network import (
    BufferKind,
    DefaultInputGate,
    DefaultNetworkEnvironment,
    NetworkConfig,
    ResultPartition,
)
from weir.taskmanager.network.frames import (
    HEADER,
    FrameDecoder,
    FrameType,
    encode_frame,
    encode_handshake,
    encode_partition_request,
)

HOST = "127.0.0.1"
TOKEN = "t"
EDGE = JobEdge(
    JobVertexId("src"), OperatorId("op"), JobVertexId("dst"), 0, PartitionerKind.REBALANCE
)
# Far beyond a loopback exchange of a few hundred buffers; only a hang reaches it.
DEADLINE_S = 20.0


def _wait_until(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not reached in time"
        time.sleep(0.005)  # polling interval


def _pid(name: str) -> ResultPartitionId:
    return ResultPartitionId(ExecutionAttemptId(name), 0)


def _partition(env: DefaultNetworkEnvironment, name: str) -> ResultPartition:
    return env.create_result_partition(ResultPartitionDescriptor(_pid(name), EDGE, 1, (0,), 1, 128))


def _gate(
    consumer: DefaultNetworkEnvironment, address: tuple[str, int], name: str
) -> DefaultInputGate:
    location = TaskManagerLocation(ResourceId("producer"), *address)
    channel = InputChannelDescriptor(_pid(name), 0, location, False)
    return consumer.create_input_gate((InputGateDescriptor(0, EDGE, (channel,)),))


def _exchange(
    producer: DefaultNetworkEnvironment, consumer: DefaultNetworkEnvironment, name: str
) -> list[bytes]:
    """300 buffers from a partition of ``producer`` to a gate of ``consumer``, over TCP."""
    writer = _partition(producer, name)
    assert producer.data_port is not None
    gate = _gate(consumer, (HOST, producer.data_port), name)

    def produce() -> None:
        for i in range(300):
            writer.emit(0, b"%d" % i)
        writer.finish()

    thread = threading.Thread(target=produce)
    thread.start()
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while not gate.is_finished():
        assert time.monotonic() < deadline, f"only {len(got)} buffers arrived"
        polled = gate.poll(0.5)
        if polled is not None and polled[2] == BufferKind.DATA:
            got.append(polled[3])
    thread.join()
    return got


EXPECTED = [b"%d" % i for i in range(300)]


@pytest.fixture
def make_env() -> Iterator[Callable[..., DefaultNetworkEnvironment]]:
    envs: list[DefaultNetworkEnvironment] = []

    def make(name: str, **start: object) -> DefaultNetworkEnvironment:
        config = NetworkConfig(security=SecurityConfig(token=TOKEN))
        env = DefaultNetworkEnvironment(name * 8, HOST, config)
        env.start(**start)  # type: ignore[arg-type]
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def _send(port: int, data: bytes) -> str:
    """Send ``data`` after a valid handshake on a fresh connection and read until the
    server closes it; returns the peer name the server sees (``host:port`` of this end)."""
    with socket.create_connection((HOST, port), timeout=DEADLINE_S) as sock:
        local = sock.getsockname()
        sock.sendall(encode_handshake(TOKEN) + data)
        try:
            while sock.recv(65536):
                pass
        except ConnectionResetError:
            pass  # closed with our bytes unread: closed all the same
    return f"{local[0]}:{local[1]}"


def _request(channel_id: int, name: str, credits: int = 2) -> bytes:
    return encode_partition_request(channel_id, _pid(name), 0, credits)


MALFORMED: dict[str, bytes] = {
    # The frame of the report: a partition request whose body is cut short.
    "a-partition-request-with-a-short-body": encode_frame(
        FrameType.PARTITION_REQUEST, 1, 2, b"\x00\x00"
    ),
    "a-partition-request-without-a-producer": encode_frame(
        FrameType.PARTITION_REQUEST, 1, 2, b"\x00" * 8
    ),
    "a-producer-id-that-is-not-utf-8": encode_frame(
        FrameType.PARTITION_REQUEST, 1, 2, b"\x00" * 8 + b"\xff\xfe"
    ),
    "negative-initial-credits": _request(1, "victim", credits=-1),
    "an-unknown-frame-type": HEADER.pack(0, 99, 0, 1, 0),
    "an-unknown-buffer-kind": HEADER.pack(0, FrameType.ADD_CREDIT, 99, 1, 1),
    "a-frame-longer-than-a-consumer-sends": HEADER.pack(1 << 20, FrameType.ADD_CREDIT, 0, 1, 1),
    "a-second-handshake": encode_handshake(TOKEN),
    "a-buffer-sent-to-a-producer": encode_frame(FrameType.BUFFER_RESPONSE, 1, 0, b"x"),
    "an-error-sent-to-a-producer": encode_frame(FrameType.ERROR_RESPONSE, 1, 0, b"x"),
    "an-add-credit-with-a-payload": encode_frame(FrameType.ADD_CREDIT, 1, 1, b"junk"),
    "a-negative-add-credit": _request(1, "victim") + encode_frame(FrameType.ADD_CREDIT, 1, -5),
    "a-cancel-with-a-payload": encode_frame(FrameType.CANCEL_PARTITION_REQUEST, 1, 0, b"x"),
    "a-channel-requested-twice": _request(1, "victim") + _request(1, "victim"),
}


class TestMalformedFramesFromAConsumer:
    @pytest.mark.parametrize("frame", list(MALFORMED.values()), ids=list(MALFORMED))
    def test_closes_that_connection_with_one_warning_and_serves_on(
        self, make_env, frame: bytes, caplog: pytest.LogCaptureFixture
    ) -> None:
        producer = make_env("a")
        _partition(producer, "victim").emit(0, b"not for a peer that breaks the protocol")
        assert producer.data_port is not None
        with caplog.at_level(logging.WARNING, logger="weir.taskmanager"):
            # The server closes the connection (the read in _send ends) ...
            peer = _send(producer.data_port, frame)
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("weir.taskmanager")]
        # ... said so once, naming the peer ...
        assert len(lines) == 1, lines
        assert peer in lines[0]
        # ... and nothing else happened: the server still serves a real consumer.
        assert _exchange(producer, make_env("b"), "after") == EXPECTED
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]

    def test_the_data_port_serves_after_every_malformed_frame_in_a_row(self, make_env) -> None:
        producer = make_env("a")
        assert producer.data_port is not None
        for frame in MALFORMED.values():
            _send(producer.data_port, frame)
        assert _exchange(producer, make_env("b"), "after") == EXPECTED

    def test_an_unexpected_error_in_one_connection_closes_only_that_one(
        self, make_env, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        producer = make_env("a")
        assert producer.data_port is not None
        partitions = producer._partitions
        real_request = partitions.request

        def request(partition_id, on_ready) -> None:
            if partition_id == _pid("cursed"):
                raise RuntimeError("a bug that one request runs into")
            real_request(partition_id, on_ready)

        monkeypatch.setattr(partitions, "request", request)
        with caplog.at_level(logging.WARNING, logger="weir.taskmanager"):
            peer = _send(producer.data_port, _request(1, "cursed"))
        (line,) = [r for r in caplog.records if r.name.startswith("weir.taskmanager")]
        assert peer in line.getMessage() and "a bug that one request runs into" in line.getMessage()
        assert line.exc_info is not None  # an unexpected error keeps its traceback
        assert _exchange(producer, make_env("b"), "after") == EXPECTED


def _fake_producer(answer: bytes) -> tuple[socket.socket, threading.Thread]:
    """A server that reads a consumer's handshake and request, then sends ``answer``."""
    server = socket.create_server((HOST, 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(DEADLINE_S)
            decoder = FrameDecoder()
            frames: list[object] = []
            while len(frames) < 2:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                frames += decoder.feed(chunk)
            conn.sendall(answer)
            while conn.recv(65536):  # until the consumer closes the connection
                pass

    thread = threading.Thread(target=serve)
    thread.start()
    return server, thread


class TestMalformedFramesFromAProducer:
    @pytest.mark.parametrize(
        "answer",
        [
            pytest.param(_request(1, "x"), id="a-partition-request-sent-to-a-consumer"),
            pytest.param(encode_handshake(TOKEN), id="a-handshake-sent-to-a-consumer"),
            pytest.param(HEADER.pack(0, FrameType.BUFFER_RESPONSE, 99, 1, 0), id="unknown-kind"),
            pytest.param(
                encode_frame(FrameType.BUFFER_RESPONSE, 1, -1, b"x"), id="a-negative-backlog"
            ),
        ],
    )
    def test_fails_the_channels_of_that_connection_and_reads_on_elsewhere(
        self, make_env, answer: bytes
    ) -> None:
        consumer = make_env("b")
        server, thread = _fake_producer(answer)
        try:
            gate = _gate(consumer, server.getsockname()[:2], "x")
            deadline = time.monotonic() + DEADLINE_S
            with pytest.raises(NetworkError, match=f"{HOST}:{server.getsockname()[1]}"):
                while True:
                    assert time.monotonic() < deadline, "the consumer's channel never failed"
                    gate.poll(0.5)
        finally:
            thread.join(DEADLINE_S)
            server.close()
        assert _exchange(make_env("a"), consumer, "after") == EXPECTED


class TestIoThreadDeath:
    def test_an_io_thread_that_dies_reports_it_once_and_fails_its_consumers(
        self, make_env, caplog: pytest.LogCaptureFixture
    ) -> None:
        reasons: list[str] = []
        producer = make_env("a", on_fatal_error=reasons.append)
        consumer = make_env("b")
        assert producer.data_port is not None
        # A bug in the partition the I/O thread serves: it raises where it never should.
        writer = _partition(producer, "broken")

        def poll(view: object) -> None:
            raise struct.error("a bug in the partition")

        writer.poll = poll  # type: ignore[method-assign]
        writer.emit(0, b"x")
        with caplog.at_level(logging.ERROR):
            _gate(consumer, (HOST, producer.data_port), "broken")
            _wait_until(lambda: reasons != [], "the fatal error handler called")
        assert len(reasons) == 1
        assert "a bug in the partition" in reasons[0]
        assert not producer._connections.is_running
        # Its port is closed: nothing can be served from it any more, which is why its
        # owner must stop and be replaced.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((HOST, producer.data_port), timeout=DEADLINE_S).close()

    def test_a_close_is_not_a_death(self, make_env) -> None:
        reasons: list[str] = []
        env = make_env("a", on_fatal_error=reasons.append)
        env.close()
        assert reasons == []
