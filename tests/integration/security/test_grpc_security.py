"""Mutual TLS and the token on a real gRPC server made by weir.core.rpc: only a client of
the cluster's CA that presents the token gets through; every other one is refused with an
error saying what to set."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from security_testing import ClusterTestCertificates, make_test_certificates

from weir.core import rpc
from weir.core.errors import AuthenticationError, ServiceUnavailableError
from weir.core.security import SecurityConfig
from weir.proto import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc


class _Stoppable(taskexecutor_pb2_grpc.TaskExecutorServicer):
    def __init__(self) -> None:
        self.stops = 0

    def Stop(self, request, context):
        self.stops += 1
        return common_pb2.Ack(ok=True)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> ClusterTestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def server(certs: ClusterTestCertificates) -> Iterator[tuple[str, _Stoppable]]:
    servicer = _Stoppable()
    grpc_server = rpc.create_server(2, security=SecurityConfig.from_config(certs.config()))
    taskexecutor_pb2_grpc.add_TaskExecutorServicer_to_server(servicer, grpc_server)
    address = rpc.bind(grpc_server, "127.0.0.1", 0)
    grpc_server.start()
    yield address, servicer
    rpc.stop_server(grpc_server, 0)


def _stop(address: str, security: SecurityConfig) -> None:
    with rpc.create_channel(address, security) as channel:
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        rpc.call("Stop", stub.Stop, taskexecutor_pb2.StopRequest(reason="test"), timeout=10)


def test_a_client_of_the_cluster_gets_through(server, certs) -> None:
    address, servicer = server
    _stop(address, SecurityConfig.from_config(certs.config()))
    assert servicer.stops == 1


def test_a_plaintext_client_is_refused_and_told_about_tls(server) -> None:
    address, servicer = server
    with pytest.raises(ServiceUnavailableError, match="security.ssl.internal.enabled"):
        _stop(address, SecurityConfig())
    assert servicer.stops == 0


def test_a_client_of_another_ca_is_refused(server, certs) -> None:
    address, servicer = server
    with pytest.raises(AuthenticationError, match="TLS handshake failed"):
        _stop(address, SecurityConfig.from_config(certs.other_ca_config()))
    assert servicer.stops == 0


def test_a_wrong_token_is_refused_with_unauthenticated_and_a_log_line(
    server, certs, caplog: pytest.LogCaptureFixture
) -> None:
    address, servicer = server
    with caplog.at_level(logging.WARNING, logger="weir.core.security"):
        with pytest.raises(AuthenticationError, match=r"UNAUTHENTICATED.*security.auth.token"):
            _stop(address, SecurityConfig.from_config(certs.config(token="guess")))
        with pytest.raises(AuthenticationError, match="UNAUTHENTICATED"):
            _stop(address, SecurityConfig.from_config(certs.config(token="")))
    assert servicer.stops == 0
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 2 and all("127.0.0.1" in line for line in refusals), refusals


def test_a_tls_client_of_a_plaintext_server_is_told_so(certs) -> None:
    grpc_server = rpc.create_server(2, security=SecurityConfig())
    taskexecutor_pb2_grpc.add_TaskExecutorServicer_to_server(_Stoppable(), grpc_server)
    address = rpc.bind(grpc_server, "127.0.0.1", 0)
    grpc_server.start()
    try:
        with pytest.raises(AuthenticationError, match="on or off alike on both sides"):
            _stop(address, SecurityConfig.from_config(certs.config()))
    finally:
        rpc.stop_server(grpc_server, 0)


def test_a_missing_pem_file_is_named(certs, tmp_path: Path) -> None:
    conf = certs.config()
    conf["security.ssl.internal.key"] = str(tmp_path / "absent.pem")
    with pytest.raises(Exception, match=r"security.ssl.internal.key .*absent.pem"):
        SecurityConfig.from_config(conf)
