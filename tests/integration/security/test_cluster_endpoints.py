"""Every endpoint of a running cluster with mutual TLS and a token: the Dispatcher, the
ResourceManager, a JobMaster, a TaskExecutor, a TaskManager's data port and both queryable
state servers (the proxy on the master, the TaskManager's state server). The attacks a
local user could make on a cluster without them (kill a TaskManager, register a fake
one, force a failover, read a running job's records) are tried by a plaintext client, a
client of another CA and a client with the wrong token; each is refused, and the job
runs on untouched."""

from __future__ import annotations

import os
import pickle
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from security_testing import ClusterTestCertificates, make_test_certificates

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.mini_cluster import MiniCluster
from weir.common import Types
from weir.core import rpc
from weir.core.deployment import ResultPartitionId
from weir.core.deployment_codec import DEPLOYMENT_VERSION
from weir.core.errors import (
    AuthenticationError,
    ServiceUnavailableError,
    UnknownKeyOrNamespaceError,
    UnknownKvStateLocationError,
)
from weir.core.executor import register_executor
from weir.core.ids import ExecutionAttemptId
from weir.core.metrics.prometheus import PROMETHEUS_FACTORY_CLASSES
from weir.core.queryable_keys import encode_key
from weir.core.security import CLUSTER_NAME, Endpoint, SecurityConfig
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.state import ValueStateDescriptor
from weir.proto import (
    common_pb2,
    dispatcher_pb2,
    dispatcher_pb2_grpc,
    jobmaster_pb2,
    jobmaster_pb2_grpc,
    queryablestate_pb2,
    queryablestate_pb2_grpc,
    resourcemanager_pb2,
    resourcemanager_pb2_grpc,
    taskexecutor_pb2,
    taskexecutor_pb2_grpc,
)
from weir.queryablestate import QueryableStateClient
from weir.taskmanager.network.frames import (
    FrameDecoder,
    FrameType,
    encode_frame,
    encode_handshake,
    encode_partition_request,
)

# A refused connection is closed at once; this only bounds a read that would hang.
READ_TIMEOUT_S = 10.0
# The running job's queryable state: the latest number of each residue mod 4.
QUERYABLE_STATE = "latest-by-residue"


def _slow(x: int) -> int:
    time.sleep(0.01)  # keeps the job running while it is attacked
    return x


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> ClusterTestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_cluster(spark_context, certs) -> Iterator[tuple[MiniCluster, str]]:
    """A MiniCluster with TLS, a token, queryable state and Prometheus over HTTPS, one
    TaskManager, and a job running on it that keeps the latest number of each residue
    mod 4 queryable."""
    config = {
        **certs.config(),
        "resourcemanager.taskmanager.max": "1",
        "rest.port": "0",  # the REST API too, on HTTPS with the token
        "heartbeat.interval": "500 ms",
        "heartbeat.timeout": "6 s",
        "queryable-state.enable": "true",
        "queryable-state.proxy.ports": "0",
        "queryable-state.server.ports": "0",
        # Prometheus on the master and the TaskManager, over HTTPS with the token.
        "metrics.reporter.prom.factory.class": PROMETHEUS_FACTORY_CLASSES[0],
        "metrics.reporter.prom.port": "0",
        "metrics.reporter.prom.ssl.enabled": "true",
    }
    cluster = MiniCluster(config, spark_context=spark_context).start()
    register_executor(cluster.executor())
    try:
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(1)
        env.from_collection(list(range(100_000)), type_info=Types.INT()).map(
            _slow
        ).disable_chaining().map(lambda x: x).key_by(
            lambda x: x % 4, key_type=Types.INT()
        ).as_queryable_state(QUERYABLE_STATE)
        job = env.execute_async("attacked")
        job_id = str(job.get_job_id())
        with _good_gateway(cluster, certs) as gateway:
            deadline = time.monotonic() + 120
            while not _running(gateway, job_id):
                assert time.monotonic() < deadline, "the job never ran"
                time.sleep(0.1)  # polling interval
        yield cluster, job_id
    finally:
        register_executor(None)
        cluster.close(stop_spark=False)


def _good_gateway(cluster: MiniCluster, certs: ClusterTestCertificates) -> DispatcherGateway:
    return DispatcherGateway(cluster.address, security=SecurityConfig.from_config(certs.config()))


def _running(gateway: DispatcherGateway, job_id: str) -> bool:
    details = gateway.job_details(job_id)
    return details.status == "RUNNING" and all(t.state == "RUNNING" for t in details.tasks)


BAD_CLIENTS: dict[str, Callable[[ClusterTestCertificates], SecurityConfig]] = {
    "plaintext": lambda certs: SecurityConfig(),
    "plaintext-with-the-token": lambda certs: SecurityConfig(
        token=certs.config()["security.auth.token"]
    ),
    "another-ca": lambda certs: SecurityConfig.from_config(certs.other_ca_config()),
    "wrong-token": lambda certs: SecurityConfig.from_config(certs.config(token="guess")),
}


def _kv_state_location(cluster: MiniCluster, certs, job_id: str) -> common_pb2.KvStateLocationEntry:
    """Where the TaskManager serves the job's queryable state: what an attacker learns
    from the Dispatcher, as the proxy does."""
    good = SecurityConfig.from_config(certs.config())
    with rpc.create_channel(cluster.address, good, Endpoint.REST) as channel:
        stub = dispatcher_pb2_grpc.DispatcherStub(channel)
        deadline = time.monotonic() + 60
        while True:
            location = rpc.call(
                "Dispatcher.RequestKvStateLocation",
                stub.RequestKvStateLocation,
                common_pb2.KvStateLocationRequest(job_id=job_id, registration_name=QUERYABLE_STATE),
            )
            if location.entries:
                return location.entries[0]
            assert time.monotonic() < deadline, "the queryable state was never registered"
            time.sleep(0.1)  # polling interval


def _attacks(cluster: MiniCluster, job_id: str, certs) -> dict[str, tuple[str, Endpoint, Any]]:
    with _good_gateway(cluster, certs) as gateway:
        details = gateway.job_details(job_id)
        (tm,) = gateway.list_task_managers()
    assert cluster.resource_manager is not None
    kv_state = _kv_state_location(cluster, certs, job_id)
    return {
        "Dispatcher.CancelJob": (
            cluster.address,
            Endpoint.REST,
            lambda ch: dispatcher_pb2_grpc.DispatcherStub(ch).CancelJob(
                common_pb2.JobIdRequest(job_id=job_id), timeout=10
            ),
        ),
        "ResourceManager.RegisterTaskExecutor": (
            cluster.resource_manager.address,
            Endpoint.INTERNAL,
            lambda ch: resourcemanager_pb2_grpc.ResourceManagerStub(ch).RegisterTaskExecutor(
                resourcemanager_pb2.RegisterTaskExecutorRequest(
                    resource_id="f" * 32, rpc_address="127.0.0.1:1", num_slots=8
                ),
                timeout=10,
            ),
        ),
        "JobMaster.NotifyTaskManagerLost": (
            details.jobmaster_address,
            Endpoint.INTERNAL,
            lambda ch: jobmaster_pb2_grpc.JobMasterStub(ch).NotifyTaskManagerLost(
                jobmaster_pb2.TaskManagerLostNotice(resource_id=tm.resource_id, reason="x"),
                timeout=10,
            ),
        ),
        "Dispatcher.RequestTaskManagerFile": (
            cluster.address,
            Endpoint.REST,
            lambda ch: dispatcher_pb2_grpc.DispatcherStub(ch).RequestTaskManagerFile(
                common_pb2.TaskManagerFileRequest(resource_id=tm.resource_id), timeout=10
            ),
        ),
        "TaskExecutor.RequestFileUpload": (
            tm.rpc_address,
            Endpoint.INTERNAL,
            lambda ch: taskexecutor_pb2_grpc.TaskExecutorStub(ch).RequestFileUpload(
                common_pb2.TaskManagerFileRequest(), timeout=10
            ),
        ),
        "TaskExecutor.Stop": (
            tm.rpc_address,
            Endpoint.INTERNAL,
            lambda ch: taskexecutor_pb2_grpc.TaskExecutorStub(ch).Stop(
                taskexecutor_pb2.StopRequest(reason="attack"), timeout=10
            ),
        ),
        "KvStateClientProxy.GetKvState": (
            cluster.queryable_state_proxy_address,
            Endpoint.REST,
            lambda ch: queryablestate_pb2_grpc.KvStateClientProxyStub(ch).GetKvState(
                queryablestate_pb2.KvStateRequest(
                    job_id=job_id,
                    queryable_state_name=QUERYABLE_STATE,
                    serialized_key=encode_key(1),
                ),
                timeout=10,
            ),
        ),
        "KvStateServer.GetKvState": (
            kv_state.server_address,
            Endpoint.INTERNAL,
            lambda ch: queryablestate_pb2_grpc.KvStateServerStub(ch).GetKvState(
                queryablestate_pb2.KvStateServerRequest(
                    kv_state_id=kv_state.kv_state_id, serialized_key=encode_key(1)
                ),
                timeout=10,
            ),
        ),
    }


@pytest.mark.parametrize("client", list(BAD_CLIENTS))
@pytest.mark.parametrize(
    "attack",
    [
        "Dispatcher.CancelJob",
        "ResourceManager.RegisterTaskExecutor",
        "JobMaster.NotifyTaskManagerLost",
        "TaskExecutor.Stop",
        "Dispatcher.RequestTaskManagerFile",
        "TaskExecutor.RequestFileUpload",
        "KvStateClientProxy.GetKvState",
        "KvStateServer.GetKvState",
    ],
)
def test_every_grpc_endpoint_refuses_a_stranger(tls_cluster, certs, client, attack) -> None:
    cluster, job_id = tls_cluster
    address, endpoint, call = _attacks(cluster, job_id, certs)[attack]
    with rpc.create_channel(address, BAD_CLIENTS[client](certs), endpoint) as channel:
        with pytest.raises((AuthenticationError, ServiceUnavailableError)):
            rpc.call(attack, lambda request, timeout: call(channel), None)
    with _good_gateway(cluster, certs) as gateway:
        assert _running(gateway, job_id)
        assert [tm.num_slots for tm in gateway.list_task_managers()] == [1]


def test_queryable_state_is_read_over_tls_with_the_cluster_s_certificates(tls_cluster, certs):
    """The documented client of a secured cluster: QueryableStateClient(..., security=...)
    reaches the proxy over TLS with the token, and the proxy the TaskManager's server."""
    cluster, job_id = tls_cluster
    security = SecurityConfig.from_config(certs.config())
    descriptor = ValueStateDescriptor(QUERYABLE_STATE, Types.INT())
    with QueryableStateClient(cluster.queryable_state_proxy_address, security=security) as client:

        def latest_of_residue_1() -> int | None:
            future = client.get_kv_state(job_id, QUERYABLE_STATE, 1, Types.INT(), descriptor)
            try:
                return future.result().value()
            except (UnknownKvStateLocationError, UnknownKeyOrNamespaceError):
                return None  # not registered, or no number of that residue yet

        deadline = time.monotonic() + 60
        while (latest := latest_of_residue_1()) is None:
            assert time.monotonic() < deadline, "no number of residue 1 was ever queryable"
            time.sleep(0.1)  # polling interval
    assert latest % 4 == 1


def _producer_partition(cluster, certs, job_id) -> tuple[tuple[str, int], ResultPartitionId]:
    """The data address of the TaskManager and a partition its running source produces:
    what an attacker learns from GetJobDetails and ListTaskManagers."""
    with _good_gateway(cluster, certs) as gateway:
        details = gateway.job_details(job_id)
        (tm,) = gateway.list_task_managers()
    (source,) = [t for t in details.tasks if t.task_name.startswith("Source")]
    pid = ResultPartitionId(ExecutionAttemptId(source.execution_attempt_id), 0)
    return (tm.data_host, tm.data_port), pid


def _read_frames(sock: socket.socket | ssl.SSLSocket) -> list[FrameType]:
    decoder = FrameDecoder()
    kinds: list[FrameType] = []
    sock.settimeout(READ_TIMEOUT_S)
    try:
        while data := sock.recv(65536):
            kinds += [f.frame_type for f in decoder.feed(data)]
    except (ssl.SSLError, ConnectionResetError):
        pass  # refused during or after the TLS handshake
    return kinds


def _tls_socket(address: tuple[str, int], conf: dict[str, str]) -> ssl.SSLSocket:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(conf["security.ssl.internal.cert"], conf["security.ssl.internal.key"])
    context.load_verify_locations(conf["security.ssl.internal.trust-cert"])
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the attacker does not care who the server is
    raw = socket.create_connection(address, timeout=READ_TIMEOUT_S)
    return context.wrap_socket(raw, server_hostname=CLUSTER_NAME)


@pytest.mark.parametrize("client", ["plaintext", "another-ca", "wrong-token"])
def test_the_data_port_gives_no_records_to_a_stranger(tls_cluster, certs, client) -> None:
    cluster, job_id = tls_cluster
    address, pid = _producer_partition(cluster, certs, job_id)
    token = "guess" if client == "wrong-token" else certs.config()["security.auth.token"]
    request = encode_handshake(token) + encode_partition_request(1, pid, 0, 100)
    if client == "plaintext":
        sock: socket.socket = socket.create_connection(address, timeout=READ_TIMEOUT_S)
    else:
        conf = certs.other_ca_config() if client == "another-ca" else certs.config()
        try:
            sock = _tls_socket(address, conf)
        except (ssl.SSLError, ConnectionResetError):
            return  # refused in the TLS handshake: nothing could be read
    with sock:
        try:
            sock.sendall(request)
        except (ssl.SSLError, BrokenPipeError, ConnectionResetError):
            return
        frames = _read_frames(sock)
    assert FrameType.BUFFER_RESPONSE not in frames, frames
    with _good_gateway(cluster, certs) as gateway:
        assert _running(gateway, job_id)


class _CreatesAFile:
    """Unpickling this creates ``path``: the proof that something was unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _evil_graph(evil: bytes) -> common_pb2.JobGraphProto:
    operator = common_pb2.OperatorDescriptorProto(
        operator_id="o" * 32, name="map", kind="map", payload=evil
    )
    vertex = common_pb2.JobVertexProto(
        vertex_id="v" * 32, name="map", parallelism=1, max_parallelism=128, operators=[operator]
    )
    return common_pb2.JobGraphProto(job_id="e" * 32, job_name="evil", vertices=[vertex])


@pytest.mark.parametrize("client", list(BAD_CLIENTS))
@pytest.mark.parametrize("target", ["Dispatcher.SubmitJob", "TaskExecutor.SubmitTask", "data"])
def test_a_payload_that_would_create_a_file_if_unpickled_creates_nothing(
    tls_cluster, certs, client, target, tmp_path
) -> None:
    cluster, job_id = tls_cluster
    marker = tmp_path / "unpickled"
    evil = pickle.dumps(_CreatesAFile(str(marker)))
    with _good_gateway(cluster, certs) as gateway:
        (tm,) = gateway.list_task_managers()
    if target == "data":
        token = "guess" if client == "wrong-token" else certs.config()["security.auth.token"]
        # A handshake, then the payload as a buffer: nothing after a refused handshake
        # is read, and a producer decodes no buffer a peer sends it anyway.
        data = encode_handshake(token) + encode_frame(FrameType.BUFFER_RESPONSE, 1, 0, evil)
        try:
            if client.startswith("plaintext"):
                sock: socket.socket = socket.create_connection(
                    (tm.data_host, tm.data_port), timeout=READ_TIMEOUT_S
                )
            else:
                conf = certs.other_ca_config() if client == "another-ca" else certs.config()
                sock = _tls_socket((tm.data_host, tm.data_port), conf)
            with sock:
                sock.sendall(data)
                _read_frames(sock)  # until the producer closes the connection
        except (ssl.SSLError, BrokenPipeError, ConnectionResetError):
            pass  # refused in the TLS handshake
    else:
        if target == "Dispatcher.SubmitJob":
            address, endpoint = cluster.address, Endpoint.REST

            def call(channel):
                return dispatcher_pb2_grpc.DispatcherStub(channel).SubmitJob(
                    dispatcher_pb2.SubmitJobRequest(
                        job_graph=_evil_graph(evil).SerializeToString()
                    ),
                    timeout=10,
                )
        else:
            address, endpoint = tm.rpc_address, Endpoint.INTERNAL
            vertex = _evil_graph(evil).vertices[0]

            def call(channel):
                return taskexecutor_pb2_grpc.TaskExecutorStub(channel).SubmitTask(
                    taskexecutor_pb2.SubmitTaskRequest(
                        jobmaster_address=address,
                        deployment=taskexecutor_pb2.TaskDeploymentDescriptorProto(
                            version=DEPLOYMENT_VERSION, vertex=vertex
                        ),
                    ),
                    timeout=10,
                )

        with rpc.create_channel(address, BAD_CLIENTS[client](certs), endpoint) as channel:
            with pytest.raises((AuthenticationError, ServiceUnavailableError)):
                rpc.call(target, lambda request, timeout: call(channel), None)
    assert not marker.exists()
    with _good_gateway(cluster, certs) as gateway:
        assert _running(gateway, job_id)


def _https(url: str, security: SecurityConfig, headers: dict[str, str]) -> tuple[int, bytes]:
    import urllib.error
    import urllib.request

    context = security.rest_client_context() or ssl.create_default_context()
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=READ_TIMEOUT_S, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_rest_api_is_https_and_asks_for_the_token(tls_cluster, certs) -> None:
    import json
    import urllib.error
    import urllib.request

    cluster, job_id = tls_cluster
    url = cluster.rest_url
    assert url.startswith("https://")
    good = SecurityConfig.from_config(certs.config())
    bearer = {"Authorization": f"Bearer {certs.config()['security.auth.token']}"}

    status, body = _https(f"{url}/jobs/{job_id}", good, bearer)
    assert status == 200 and json.loads(body)["state"] == "RUNNING"

    # The right certificates without the token, or with another: 401, saying what to send.
    for headers in ({}, {"Authorization": "Bearer guess"}):
        status, body = _https(f"{url}/jobs/{job_id}", good, headers)
        assert status == 401 and "security.auth.token" in json.loads(body)["errors"][0]
    # A browser opening the dashboard with the token keeps it as a cookie.
    import http.cookiejar

    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=good.rest_client_context()),
        urllib.request.HTTPCookieProcessor(jar),
    )
    token = certs.config()["security.auth.token"]
    with browser.open(f"{url}/?token={token}", timeout=READ_TIMEOUT_S) as page:
        assert page.geturl() == f"{url}/" and b"<html" in page.read().lower()
    with browser.open(f"{url}/overview", timeout=READ_TIMEOUT_S) as overview:
        assert json.loads(overview.read())["jobs-running"] >= 1
    status, _ = _https(f"{url}/?token=guess", good, {})
    assert status == 401

    # Plain HTTP, and a client of another CA, get no answer at all.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(url.replace("https://", "http://") + "/overview", timeout=10)
    stranger = SecurityConfig.from_config(certs.other_ca_config())
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        _https(f"{url}/overview", stranger, bearer)

    # Refusals left the job running.
    with _good_gateway(cluster, certs) as gateway:
        assert _running(gateway, job_id)


# --- what an authenticated caller sends ------------------------------------------------------
# A client of the cluster's CA with the token gets past authentication; a request field the
# server cannot decode is then refused with INVALID_ARGUMENT naming the field, never
# INTERNAL with a traceback, and the server serves on.

GARBAGE = b"\x00\xffnot what this field holds\xfe"

# Every bytes field of every request of every service, as ``(service, method, path)``, is
# in exactly one of these tables: a new one fails test_every_bytes_field_is_classified
# until it says which.
DECODED_BYTES: dict[tuple[str, str, str], str] = {
    # -> what the refusal names
    ("Dispatcher", "SubmitJob", "job_graph"): "JobGraph",
    ("JobMaster", "AcknowledgeCheckpoint", "task_state"): "task_state",
    ("TaskExecutor", "SubmitTask", "deployment.restored_state"): "deployment.restored_state",
}
NOT_DECODED_BY_THE_RECEIVER: dict[tuple[str, str, str], str] = {
    ("JobMaster", "PushCollectBatch", "batch"): (
        "a collect sink's records: held for the client, which deserializes them"
    ),
    ("TaskExecutor", "SubmitTask", "deployment.vertex.operators.payload"): (
        "a user function: unpickled only by the task that runs it, whose failure to do so "
        "fails that task"
    ),
    ("TaskExecutor", "SubmitTask", "deployment.input_gates.edge.partitioner_payload"): (
        "a user key selector: unpickled only by the task that runs it"
    ),
    ("TaskExecutor", "SubmitTask", "deployment.result_partitions.edge.partitioner_payload"): (
        "a user key selector: unpickled only by the task that runs it"
    ),
    ("KvStateClientProxy", "GetKvState", "serialized_key"): (
        "decoded by the queryable state proxy (decode_key), which refuses a key that is not "
        "one with QueryableStateError"
    ),
    ("KvStateServer", "GetKvState", "serialized_key"): (
        "decoded by the queryable state server (decode_key), which refuses a key that is not "
        "one with QueryableStateError"
    ),
}


def _bytes_fields(message: Any, prefix: str = "", depth: int = 0) -> Iterator[str]:
    from google.protobuf.descriptor import FieldDescriptor

    assert depth < 8, f"{prefix}: nested too deep (a recursive message?)"
    for field in message.fields:
        path = f"{prefix}{field.name}"
        if field.type == FieldDescriptor.TYPE_BYTES:
            yield path
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            yield from _bytes_fields(field.message_type, f"{path}.", depth + 1)


def _request_bytes_fields() -> set[tuple[str, str, str]]:
    from weir.proto import queryablestate_pb2

    found = set()
    for module in (
        dispatcher_pb2,
        jobmaster_pb2,
        resourcemanager_pb2,
        taskexecutor_pb2,
        queryablestate_pb2,
    ):
        for service in module.DESCRIPTOR.services_by_name.values():
            for method in service.methods:
                for path in _bytes_fields(method.input_type):
                    found.add((service.name, method.name, path))
    return found


def test_every_bytes_field_is_classified() -> None:
    found = _request_bytes_fields()
    assert not set(DECODED_BYTES) & set(NOT_DECODED_BY_THE_RECEIVER)
    unclassified = found - set(DECODED_BYTES) - set(NOT_DECODED_BY_THE_RECEIVER)
    assert not unclassified, (
        f"{sorted(unclassified)}: say in DECODED_BYTES where the receiver decodes it (and "
        "make a garbage value INVALID_ARGUMENT naming it), or in NOT_DECODED_BY_THE_RECEIVER "
        "why it does not"
    )
    assert not (set(DECODED_BYTES) | set(NOT_DECODED_BY_THE_RECEIVER)) - found, "stale entries"


def _decoding_attacks(
    cluster: MiniCluster, job_id: str, certs
) -> dict[str, tuple[str, Endpoint, Callable[[Any], Any], str]]:
    """``name -> (address, endpoint, call, what the refusal names)``: each call carries
    one field its server cannot decode, everything else in order."""
    with _good_gateway(cluster, certs) as gateway:
        details = gateway.job_details(job_id)
        (tm,) = gateway.list_task_managers()
    assert cluster.resource_manager is not None
    rm = cluster.resource_manager.address
    jm = details.jobmaster_address
    attempt = details.tasks[0].execution_attempt_id
    te, dispatcher = tm.rpc_address, cluster.address

    def te_stub(ch):
        return taskexecutor_pb2_grpc.TaskExecutorStub(ch)

    def jm_stub(ch):
        return jobmaster_pb2_grpc.JobMasterStub(ch)

    bad_file = common_pb2.TaskManagerFileRequest(resource_id=tm.resource_id, file_type=7)
    attacks = {
        # Bytes fields the receiver decodes (DECODED_BYTES), one by one.
        "Dispatcher.SubmitJob/job_graph": (
            dispatcher,
            Endpoint.REST,
            lambda ch: dispatcher_pb2_grpc.DispatcherStub(ch).SubmitJob(
                dispatcher_pb2.SubmitJobRequest(job_graph=GARBAGE), timeout=10
            ),
            DECODED_BYTES["Dispatcher", "SubmitJob", "job_graph"],
        ),
        "JobMaster.AcknowledgeCheckpoint/task_state": (
            jm,
            Endpoint.INTERNAL,
            lambda ch: jm_stub(ch).AcknowledgeCheckpoint(
                jobmaster_pb2.AcknowledgeCheckpointRequest(
                    job_id=job_id, execution_attempt_id=attempt, checkpoint_id=1, task_state=GARBAGE
                ),
                timeout=10,
            ),
            DECODED_BYTES["JobMaster", "AcknowledgeCheckpoint", "task_state"],
        ),
        "TaskExecutor.SubmitTask/deployment.restored_state": (
            te,
            Endpoint.INTERNAL,
            lambda ch: te_stub(ch).SubmitTask(
                taskexecutor_pb2.SubmitTaskRequest(
                    jobmaster_address=jm,
                    deployment=taskexecutor_pb2.TaskDeploymentDescriptorProto(
                        version=DEPLOYMENT_VERSION,
                        job_id=job_id,
                        restored_state=GARBAGE,
                        has_restored_state=True,
                    ),
                ),
                timeout=10,
            ),
            DECODED_BYTES["TaskExecutor", "SubmitTask", "deployment.restored_state"],
        ),
        # Fields of other types holding a value that is none of theirs.
        "TaskExecutor.TriggerCheckpoint/options.checkpoint_type": (
            te,
            Endpoint.INTERNAL,
            lambda ch: te_stub(ch).TriggerCheckpoint(
                taskexecutor_pb2.TriggerCheckpointRequest(
                    execution_attempt_id=attempt,
                    checkpoint_id=1,
                    options=taskexecutor_pb2.CheckpointOptions(checkpoint_type="BOGUS"),
                ),
                timeout=10,
            ),
            "options.checkpoint_type",
        ),
        "TaskExecutor.SubmitTask/deployment.vertex.operators.kind": (
            te,
            Endpoint.INTERNAL,
            lambda ch: te_stub(ch).SubmitTask(
                taskexecutor_pb2.SubmitTaskRequest(
                    jobmaster_address=jm,
                    deployment=taskexecutor_pb2.TaskDeploymentDescriptorProto(
                        version=DEPLOYMENT_VERSION,
                        job_id=job_id,
                        vertex=common_pb2.JobVertexProto(
                            operators=[common_pb2.OperatorDescriptorProto(kind="bogus")]
                        ),
                    ),
                ),
                timeout=10,
            ),
            "deployment",
        ),
        "TaskExecutor.RequestFileUpload/file_type": (
            te,
            Endpoint.INTERNAL,
            lambda ch: te_stub(ch).RequestFileUpload(bad_file, timeout=10),
            "file_type",
        ),
        "ResourceManager.RequestTaskManagerFile/file_type": (
            rm,
            Endpoint.INTERNAL,
            lambda ch: resourcemanager_pb2_grpc.ResourceManagerStub(ch).RequestTaskManagerFile(
                bad_file, timeout=10
            ),
            "file_type",
        ),
        "Dispatcher.RequestTaskManagerFile/file_type": (
            dispatcher,
            Endpoint.REST,
            lambda ch: dispatcher_pb2_grpc.DispatcherStub(ch).RequestTaskManagerFile(
                bad_file, timeout=10
            ),
            "file_type",
        ),
        "JobMaster.UpdateTaskExecutionState/state": (
            jm,
            Endpoint.INTERNAL,
            lambda ch: jm_stub(ch).UpdateTaskExecutionState(
                jobmaster_pb2.TaskExecutionStateUpdate(
                    job_id=job_id, execution_attempt_id=attempt, state="BOGUS"
                ),
                timeout=10,
            ),
            "state",
        ),
    }
    assert {key for key in DECODED_BYTES if f"{key[0]}.{key[1]}/{key[2]}" not in attacks} == set()
    return attacks


DECODING_ATTACKS = [
    "Dispatcher.SubmitJob/job_graph",
    "JobMaster.AcknowledgeCheckpoint/task_state",
    "TaskExecutor.SubmitTask/deployment.restored_state",
    "TaskExecutor.TriggerCheckpoint/options.checkpoint_type",
    "TaskExecutor.SubmitTask/deployment.vertex.operators.kind",
    "TaskExecutor.RequestFileUpload/file_type",
    "ResourceManager.RequestTaskManagerFile/file_type",
    "Dispatcher.RequestTaskManagerFile/file_type",
    "JobMaster.UpdateTaskExecutionState/state",
]


@pytest.mark.parametrize("attack", DECODING_ATTACKS)
def test_a_field_the_server_cannot_decode_is_invalid_argument_naming_it(
    tls_cluster, certs, attack
) -> None:
    import grpc

    cluster, job_id = tls_cluster
    address, endpoint, call, named = _decoding_attacks(cluster, job_id, certs)[attack]
    good = SecurityConfig.from_config(certs.config())
    with rpc.create_channel(address, good, endpoint) as channel:
        with pytest.raises(grpc.RpcError) as info:
            call(channel)
    code, details = info.value.code(), info.value.details()
    assert code == grpc.StatusCode.INVALID_ARGUMENT, f"{code}: {details}"
    assert named in details
    assert "Traceback" not in details
    # ... and nothing else happened: the job runs on, every server serves.
    with _good_gateway(cluster, certs) as gateway:
        assert _running(gateway, job_id)
        (tm,) = gateway.list_task_managers()
    with rpc.create_channel(tm.rpc_address, good) as channel:
        stub = taskexecutor_pb2_grpc.TaskExecutorStub(channel)
        assert rpc.call("GetMetrics", stub.GetMetrics, common_pb2.Empty()).metrics


def _prometheus_endpoints(cluster: MiniCluster, certs) -> dict[str, str]:
    """The master's and the TaskManager's Prometheus ``host:port``, as the REST API shows
    the TaskManager's."""
    import json

    good = SecurityConfig.from_config(certs.config())
    bearer = {"Authorization": f"Bearer {certs.config()['security.auth.token']}"}
    status, body = _https(f"{cluster.rest_url}/taskmanagers", good, bearer)
    assert status == 200, body
    (tm,) = json.loads(body)["taskmanagers"]
    return {"master": cluster.prometheus_address, "taskmanager": tm["prometheusAddress"]}


@pytest.mark.parametrize("process", ["master", "taskmanager"])
def test_prometheus_is_https_and_asks_for_the_token(tls_cluster, certs, process) -> None:
    import urllib.error
    import urllib.request

    cluster, _ = tls_cluster
    address = _prometheus_endpoints(cluster, certs)[process]
    assert address
    url = f"https://{address}/metrics"
    good = SecurityConfig.from_config(certs.config())
    bearer = {"Authorization": f"Bearer {certs.config()['security.auth.token']}"}

    status, body = _https(url, good, bearer)
    assert status == 200 and b"flink_" in body, body[:200]
    for headers in ({}, {"Authorization": "Bearer guess"}):
        status, body = _https(url, good, headers)
        assert status == 401 and b"security.auth.token" in body
    # Plain HTTP, and a client of another CA, get no answer at all.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(f"http://{address}/metrics", timeout=READ_TIMEOUT_S)
    stranger = SecurityConfig.from_config(certs.other_ca_config())
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        _https(url, stranger, bearer)


def test_a_client_that_never_speaks_does_not_stop_prometheus_scrapes(tls_cluster, certs):
    """The TLS handshake is made on each connection's thread: a connection that sends
    nothing holds only its own."""
    cluster, _ = tls_cluster
    host, port = cluster.prometheus_address.rsplit(":", 1)
    good = SecurityConfig.from_config(certs.config())
    bearer = {"Authorization": f"Bearer {certs.config()['security.auth.token']}"}
    with socket.create_connection((host, int(port)), timeout=READ_TIMEOUT_S):
        status, body = _https(f"https://{cluster.prometheus_address}/metrics", good, bearer)
    assert status == 200 and b"flink_jobmanager_numRunningJobs" in body
