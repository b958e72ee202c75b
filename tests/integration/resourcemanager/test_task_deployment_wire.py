"""SubmitTask carries a versioned protobuf descriptor: a TaskManager unpickles nothing it
receives there, and refuses a descriptor of another version naming both versions."""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from _rm_testing import TestingResourceManager

from weir.core import rpc
from weir.core.deployment_codec import DEPLOYMENT_VERSION
from weir.core.errors import DeploymentVersionError
from weir.core.security import SecurityConfig
from weir.proto import common_pb2, taskexecutor_pb2, taskexecutor_pb2_grpc
from weir.taskmanager.task_executor import TaskExecutor

CONFIG = {"heartbeat.interval": "100 ms", "heartbeat.timeout": "2 s"}


class _CreatesAFile:
    """Unpickling this creates ``path``: the proof that something was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.fixture
def executor() -> Iterator[TaskExecutor]:
    rm = TestingResourceManager(interval_ms=100, timeout_ms=2000)
    te = TaskExecutor(CONFIG, rm.address)
    te.start()
    yield te
    te.close()
    rm.close()


def _raw_submit(address: str, body: bytes) -> None:
    """SubmitTask with a request body of our own making, as an attacker would send it."""
    with rpc.create_channel(address, SecurityConfig()) as channel:
        method = channel.unary_unary(
            "/weir.TaskExecutor/SubmitTask",
            request_serializer=lambda b: b,
            response_deserializer=common_pb2.Ack.FromString,
        )
        rpc.call("SubmitTask", method, body, timeout=10)


def _length_delimited(field: int, payload: bytes) -> bytes:
    key = (field << 3) | 2
    length, varint = len(payload), b""
    while True:
        byte = length & 0x7F
        length >>= 7
        varint += bytes([byte | (0x80 if length else 0)])
        if not length:
            break
    return bytes([key]) + varint + payload


def test_a_pickle_in_submit_task_is_never_unpickled(executor, tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    evil = pickle.dumps(_CreatesAFile(str(marker)))
    # Field 1 held the pickled descriptor before; field 3's descriptor is what is read now.
    with pytest.raises(DeploymentVersionError, match="version 0"):
        _raw_submit(executor.rpc_address, _length_delimited(1, evil))
    assert not marker.exists()


def test_a_descriptor_of_another_version_is_refused_naming_both(executor) -> None:
    with rpc.create_channel(executor.rpc_address, SecurityConfig()) as channel:
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        request = taskexecutor_pb2.SubmitTaskRequest(
            deployment=taskexecutor_pb2.TaskDeploymentDescriptorProto(
                version=DEPLOYMENT_VERSION + 1, weir_version="9.9.9"
            ),
            jobmaster_address="127.0.0.1:1",
        )
        with pytest.raises(DeploymentVersionError) as caught:
            rpc.call("SubmitTask", stub.SubmitTask, request, timeout=10)
    message = str(caught.value)
    assert f"version {DEPLOYMENT_VERSION + 1}" in message and "9.9.9" in message
    assert f"speaks version {DEPLOYMENT_VERSION}" in message
    assert executor.running_tasks() == []
