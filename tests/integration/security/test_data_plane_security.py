"""The data plane's handshake and TLS, on real DefaultNetworkEnvironments over loopback:
a consumer of the cluster reads its subpartition; plaintext peers, peers of another CA,
wrong tokens, garbage and other protocol versions are refused with one log line each,
and the producer keeps serving."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from security_testing import ClusterTestCertificates, make_test_certificates

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
from weir.taskmanager.network import BufferKind, DefaultNetworkEnvironment, NetworkConfig
from weir.taskmanager.network.frames import (
    PROTOCOL_MAGIC,
    FrameType,
    encode_frame,
    encode_handshake,
    encode_partition_request,
)

HOST = "127.0.0.1"
EDGE = JobEdge(
    JobVertexId("src"), OperatorId("op"), JobVertexId("dst"), 0, PartitionerKind.REBALANCE
)
# Far beyond a loopback exchange of a few hundred buffers; only a hang reaches it.
DEADLINE_S = 20.0


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> ClusterTestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def make_env() -> Iterator[Callable[[str, SecurityConfig], DefaultNetworkEnvironment]]:
    envs: list[DefaultNetworkEnvironment] = []

    def make(name: str, security: SecurityConfig) -> DefaultNetworkEnvironment:
        env = DefaultNetworkEnvironment(name * 8, HOST, NetworkConfig(security=security))
        env.start()
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def _pid(name: str) -> ResultPartitionId:
    return ResultPartitionId(ExecutionAttemptId(name), 0)


def _gate(consumer: DefaultNetworkEnvironment, producer: DefaultNetworkEnvironment, pid):
    assert producer.data_port is not None
    location = TaskManagerLocation(ResourceId(producer.resource_id), HOST, producer.data_port)
    channel = InputChannelDescriptor(pid, 0, location, False)
    return consumer.create_input_gate((InputGateDescriptor(0, EDGE, (channel,)),))


def _exchange(producer, consumer, name: str, count: int = 300) -> list[bytes]:
    """``count`` buffers from ``producer`` to ``consumer``; what arrived, in order."""
    pid = _pid(name)
    writer = producer.create_result_partition(ResultPartitionDescriptor(pid, EDGE, 1, (0,), 1, 128))
    gate = _gate(consumer, producer, pid)

    def produce() -> None:
        for i in range(count):
            writer.emit(0, b"%d:" % i + b"x" * 4000)
        writer.finish()

    thread = threading.Thread(target=produce)
    thread.start()
    got: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while not gate.is_finished():
        assert time.monotonic() < deadline, f"only {len(got)} buffers arrived"
        polled = gate.poll(0.5)
        if polled is not None and polled[2] == BufferKind.DATA:
            got.append(polled[3].split(b":")[0])
    thread.join()
    return got


def _refused_read(producer, consumer, name: str) -> str:
    """The error a consumer gets when the producer refuses it."""
    pid = _pid(name)
    producer.create_result_partition(ResultPartitionDescriptor(pid, EDGE, 1, (0,), 1, 128))
    gate = _gate(consumer, producer, pid)
    deadline = time.monotonic() + DEADLINE_S
    with pytest.raises(NetworkError) as caught:
        while True:
            assert time.monotonic() < deadline, "the consumer was never refused"
            assert gate.poll(0.5) is None, "a refused consumer received a buffer"
    return str(caught.value)


def _expected(count: int = 300) -> list[bytes]:
    return [b"%d" % i for i in range(count)]


def test_tls_exchange_delivers_every_buffer_in_order(make_env, certs) -> None:
    security = SecurityConfig.from_config(certs.config())
    producer, consumer = make_env("a", security), make_env("b", security)
    assert _exchange(producer, consumer, "p1") == _expected()


def test_a_wrong_token_is_refused_and_the_producer_keeps_serving(
    make_env, certs, caplog: pytest.LogCaptureFixture
) -> None:
    security = SecurityConfig.from_config(certs.config())
    producer = make_env("a", security)
    intruder = make_env("b", SecurityConfig.from_config(certs.config(token="guess")))
    with caplog.at_level(logging.WARNING):
        reason = _refused_read(producer, intruder, "p1")
    assert "refused the connection" in reason and "security.auth.token" in reason
    assert [r for r in caplog.records if "refused the data connection from" in r.getMessage()]
    assert _exchange(producer, make_env("c", security), "p2") == _expected()


def test_a_peer_of_another_ca_is_refused(make_env, certs, caplog) -> None:
    security = SecurityConfig.from_config(certs.config())
    producer = make_env("a", security)
    with caplog.at_level(logging.WARNING):
        _refused_read(
            producer, make_env("b", SecurityConfig.from_config(certs.other_ca_config())), "p1"
        )
    assert [r for r in caplog.records if "TLS handshake" in r.getMessage()]
    assert _exchange(producer, make_env("c", security), "p2") == _expected()


def test_a_plaintext_peer_is_refused_by_a_tls_producer(make_env, certs) -> None:
    security = SecurityConfig.from_config(certs.config())
    producer = make_env("a", security)
    plain = SecurityConfig(token=security.token)
    _refused_read(producer, make_env("b", plain), "p1")
    assert _exchange(producer, make_env("c", security), "p2") == _expected()


def _raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; what comes back before the server closes."""
    with socket.create_connection((HOST, port), timeout=DEADLINE_S) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


@pytest.mark.parametrize(
    "first_bytes",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="garbage"),
        pytest.param(struct.pack(">IBBIi", 1 << 30, 2, 0, 1, 0), id="a-huge-frame"),
        pytest.param(
            encode_frame(FrameType.HANDSHAKE, 0, 0, struct.pack(">4sH", PROTOCOL_MAGIC, 99) + b"t"),
            id="another-version",
        ),
        pytest.param(
            encode_partition_request(1, _pid("p1"), 0, 2), id="a-request-without-handshake"
        ),
    ],
)
def test_a_bad_first_frame_closes_the_connection_with_one_log_line(
    make_env, first_bytes: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    producer = make_env("a", SecurityConfig(token="t"))
    pid = _pid("p1")
    writer = producer.create_result_partition(ResultPartitionDescriptor(pid, EDGE, 1, (0,), 1, 128))
    writer.emit(0, b"secret")
    assert producer.data_port is not None
    with caplog.at_level(logging.WARNING):
        answer = _raw_exchange(
            producer.data_port, first_bytes + encode_partition_request(1, pid, 0, 2)
        )
    assert b"secret" not in answer
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("weir.taskmanager")]
    assert len(lines) == 1, lines
    # ... and the producer still serves a peer that speaks the protocol.
    consumer = make_env("b", SecurityConfig(token="t"))
    assert _exchange(producer, consumer, "p2") == _expected()


def test_a_good_handshake_is_served(make_env) -> None:
    producer = make_env("a", SecurityConfig(token="t"))
    pid = _pid("p1")
    writer = producer.create_result_partition(ResultPartitionDescriptor(pid, EDGE, 1, (0,), 1, 128))
    writer.emit(0, b"payload")
    writer.finish()
    assert producer.data_port is not None
    with socket.create_connection((HOST, producer.data_port), timeout=DEADLINE_S) as sock:
        sock.sendall(encode_handshake("t") + encode_partition_request(1, pid, 0, 2))
        received = b""
        deadline = time.monotonic() + DEADLINE_S
        while b"payload" not in received:
            assert time.monotonic() < deadline
            received += sock.recv(65536)
