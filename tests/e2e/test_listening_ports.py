"""Every TCP port the processes of a cluster with mutual TLS and a token listen on, found
from the processes themselves (their sockets in /proc), not from what the cluster says it
serves: the master's and each TaskManager's. Each must speak TLS and refuse a plaintext
client, or be listed in PLAINTEXT_ON_LOOPBACK with the reason and listen on 127.0.0.1.
A port that none of the processes announces fails the test until it is classified here.

The cluster runs on 127.0.0.2, a loopback address of its own: a plaintext port that
followed the cluster's address instead of staying on 127.0.0.1 shows. It serves queryable
state and Prometheus (without TLS of its own, as a secured cluster does by default), and
runs a job, so that a JobMaster listens too."""

from __future__ import annotations

import http.client
import re
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cluster_harness import (
    JOB_TIMEOUT_S,
    WeirCluster,
    listening_addresses,
    wait_until,
)

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Types
from weir.core.errors import (
    UnknownKeyOrNamespaceError,
    UnknownKvStateKeyGroupLocationError,
    UnknownKvStateLocationError,
)
from weir.core.metrics.prometheus import PROMETHEUS_FACTORY_CLASSES
from weir.core.security import TOKEN_METADATA_KEY
from weir.datastream.state import ValueStateDescriptor
from weir.queryablestate import QueryableStateClient

HOST = "127.0.0.2"
QUERYABLE_JOB = Path(__file__).parent / "jobs" / "queryable_latest.py"
QUERYABLE_STATE = "latest-by-residue"
JOB_ID = re.compile(r"Job has been submitted with JobID ([0-9a-f]{32})")
# A refused connection is closed at once; this only bounds a probe that would hang.
PROBE_TIMEOUT_S = 10.0

# What a process announces in its log when it starts listening, by the name the table
# gives the port. A port nothing announces fails the test: announce it, and classify it.
MASTER_ANNOUNCEMENTS = {
    "Dispatcher": r"Dispatcher at (\S+) is leader",
    "ResourceManager": r"ResourceManager started at (\S+) ",
    "JobMaster": r"JobMaster for job .* at (\S+) is leader",
    "REST API and dashboard": r"REST endpoint and web dashboard at https://(\S+)",
    "queryable state proxy": r"Queryable State Proxy Server @ (\S+)",
    "Prometheus": r"Prometheus endpoint at https?://(\S+)/metrics",
}
TASK_MANAGER_ANNOUNCEMENTS = {
    "TaskExecutor": r"registered with the ResourceManager at \S+ \(rpc (\S+),",
    "data server": r"data server of \w+ listening on (\S+)",
    "queryable state server": r"Queryable State Data Server @ (\S+)",
    "Prometheus": r"Prometheus endpoint at https?://(\S+)/metrics",
}
# The one port of the master process that Weir does not open: the SparkContext's.
MASTER_UNANNOUNCED = "PySpark's accumulator server"

PLAINTEXT_ON_LOOPBACK = {
    "Prometheus": (
        "Flink's reporter has no TLS, and Weir's has it only with "
        "metrics.reporter.prom.ssl.enabled; on a cluster with security on it binds "
        "127.0.0.1 by default and asks for security.auth.token"
    ),
    MASTER_UNANNOUNCED: (
        "PySpark's driver opens it on localhost for its workers' accumulator updates and "
        "asks for the driver's own secret; Spark has no TLS for it"
    ),
}


@dataclass(frozen=True)
class ListeningPort:
    process: str  # "master" or "TaskManager <resource id>"
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.process}: {self.name} at {self.host}:{self.port}"


@dataclass
class SecuredCluster:
    cluster: WeirCluster
    master_pid: int
    job_id: str


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    cluster = WeirCluster(
        tmp_path_factory.mktemp("weir-ports"),
        "local[2]",
        host=HOST,
        tls=True,
        extra_conf={
            "queryable-state.enable": "true",
            "queryable-state.proxy.ports": "0",
            "queryable-state.server.ports": "0",
            "metrics.reporter.prom.factory.class": PROMETHEUS_FACTORY_CLASSES[0],
            "metrics.reporter.prom.port": "0",
        },
    )
    result = cluster.start("-n", "2")
    assert result.returncode == 0, cluster.explain(result)
    try:
        run = cluster.weir("run", "-d", str(QUERYABLE_JOB))
        assert run.returncode == 0, cluster.explain(run)
        job_id = JOB_ID.search(run.stdout).group(1)
        with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:

            def running() -> bool:
                details = gateway.job_details(job_id)
                return details.status == "RUNNING" and all(
                    t.state == "RUNNING" for t in details.tasks
                )

            wait_until(running, JOB_TIMEOUT_S, f"job {job_id} to run")
            wait_until(
                lambda: len(gateway.list_task_managers()) == 2,
                JOB_TIMEOUT_S,
                "both TaskManagers to register",
            )
        yield SecuredCluster(cluster, cluster.master_pid(), job_id)
    finally:
        stop = cluster.stop()
        assert stop.returncode == 0, cluster.explain(stop)


def _announced(log: str, announcements: dict[str, str]) -> dict[tuple[str, int], str]:
    found: dict[tuple[str, int], str] = {}
    for name, pattern in announcements.items():
        for address in re.findall(pattern, log):
            host, port = address.rsplit(":", 1)
            found[(host, int(port))] = name
    return found


def listening_ports(secured: SecuredCluster) -> list[ListeningPort]:
    """Every port the master and the TaskManagers listen on, named by what the process
    announced there; a port no announcement names is named ``unannounced``."""
    cluster = secured.cluster
    with DispatcherGateway(cluster.address, security=cluster.security()) as gateway:
        task_managers = gateway.list_task_managers()
    processes = [
        ("master", secured.master_pid, _announced(cluster.log_text(), MASTER_ANNOUNCEMENTS))
    ]
    for tm in task_managers:
        log = (cluster.log_dir / f"taskmanager-{tm.resource_id}" / "taskmanager.log").read_text()
        processes.append(
            (
                f"TaskManager {tm.resource_id[:8]}",
                tm.pid,
                _announced(log, TASK_MANAGER_ANNOUNCEMENTS),
            )
        )
    ports: list[ListeningPort] = []
    for process, pid, announced in processes:
        unannounced: list[ListeningPort] = []
        for host, port in sorted(listening_addresses(pid)):
            name = announced.get((host, port), "unannounced")
            entry = ListeningPort(process, name, host, port)
            (unannounced if name == "unannounced" else ports).append(entry)
        if process == "master" and len(unannounced) == 1:
            (only,) = unannounced
            unannounced = [ListeningPort(process, MASTER_UNANNOUNCED, only.host, only.port)]
        ports.extend(unannounced)
    return ports


# --- probes ------------------------------------------------------------------------------


def tls_handshake_completes(port: ListeningPort, cluster: WeirCluster) -> bool:
    """A client with the cluster's certificate completes a TLS handshake, and the server's
    certificate is the cluster's: the port speaks TLS (none of ours also speaks plaintext)."""
    conf = cluster.conf
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_cert_chain(conf["security.ssl.internal.cert"], conf["security.ssl.internal.key"])
    context.load_verify_locations(conf["security.ssl.internal.trust-cert"])
    context.set_alpn_protocols(["h2", "http/1.1"])  # gRPC servers ask for h2
    try:
        with socket.create_connection((port.host, port.port), timeout=PROBE_TIMEOUT_S) as raw:
            with context.wrap_socket(raw, server_hostname=port.host):
                return True
    except (ssl.SSLError, OSError):
        return False


def plaintext_grpc_answer(port: ListeningPort, token: str) -> str | None:
    """The status a plaintext gRPC call with the token gets (any answer but UNAVAILABLE is
    a conversation in plaintext); None if it gets none."""
    with grpc.insecure_channel(f"{port.host}:{port.port}") as channel:
        probe = channel.unary_unary("/weir.Probe/Probe")
        try:
            probe(b"", timeout=PROBE_TIMEOUT_S, metadata=((TOKEN_METADATA_KEY, token),))
        except grpc.RpcError as exc:
            return None if exc.code() is grpc.StatusCode.UNAVAILABLE else exc.code().name
    return "OK"


def plaintext_http_answer(port: ListeningPort, token: str | None) -> int | None:
    """The HTTP status a plaintext GET (with the token as bearer, if given) gets; None if
    no HTTP answer comes."""
    connection = http.client.HTTPConnection(port.host, port.port, timeout=PROBE_TIMEOUT_S)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request("GET", "/metrics", headers=headers)
        return connection.getresponse().status
    except (http.client.HTTPException, OSError):
        return None
    finally:
        connection.close()


def verdict(port: ListeningPort, cluster: WeirCluster) -> str:
    """ "" when the port is as its class says it must be, else what is wrong."""
    token = cluster.conf["security.auth.token"]
    if port.name == "unannounced":
        return "no process announces it: classify it in this test"
    if port.name in PLAINTEXT_ON_LOOPBACK:
        if port.host != "127.0.0.1":
            return f"plaintext, and not on 127.0.0.1 but on {port.host}"
        if port.name == "Prometheus":
            without, with_token = (
                plaintext_http_answer(port, None),
                plaintext_http_answer(port, token),
            )
            if (without, with_token) != (401, 200):
                return f"answers {without} without the token and {with_token} with it"
        return ""
    problems = []
    if not tls_handshake_completes(port, cluster):
        problems.append("no TLS handshake with the cluster's certificate")
    if (grpc_answer := plaintext_grpc_answer(port, token)) is not None:
        problems.append(f"a plaintext gRPC call is answered {grpc_answer}")
    if (http_answer := plaintext_http_answer(port, token)) is not None:
        problems.append(f"a plaintext HTTP GET is answered {http_answer}")
    return "; ".join(problems)


def test_every_listening_port_speaks_tls_or_is_plaintext_on_loopback_on_purpose(
    secured_cluster,
) -> None:
    ports = listening_ports(secured_cluster)
    names = {p.name for p in ports}
    # Every kind of server ran: a probe that found nothing would prove nothing.
    assert set(MASTER_ANNOUNCEMENTS) | set(TASK_MANAGER_ANNOUNCEMENTS) <= names, ports
    table = [(port, verdict(port, secured_cluster.cluster)) for port in ports]
    report = "\n".join(f"{port}: {problem or 'ok'}" for port, problem in table)
    assert not [port for port, problem in table if problem], report


def test_queryable_state_is_read_over_tls_across_processes(secured_cluster) -> None:
    """QueryableStateClient(..., security=...) through the master's proxy to the state
    server of the TaskManager that runs the job, each hop over TLS with the token."""
    cluster = secured_cluster.cluster
    (proxy,) = set(re.findall(MASTER_ANNOUNCEMENTS["queryable state proxy"], cluster.log_text()))
    descriptor = ValueStateDescriptor(QUERYABLE_STATE, Types.LONG())
    with QueryableStateClient(proxy, security=cluster.security()) as client:

        def latest_of_residue_3() -> int | None:
            future = client.get_kv_state(
                secured_cluster.job_id, QUERYABLE_STATE, 3, Types.LONG(), descriptor
            )
            try:
                return future.result().value()
            except (
                UnknownKvStateLocationError,
                UnknownKvStateKeyGroupLocationError,
                UnknownKeyOrNamespaceError,
            ):
                return None  # not registered yet, or no number of that residue yet

        wait_until(lambda: latest_of_residue_3() is not None, JOB_TIMEOUT_S, "residue 3")
        first = latest_of_residue_3()
        assert first is not None and first % 4 == 3
        wait_until(lambda: (latest_of_residue_3() or 0) > first, JOB_TIMEOUT_S, "a later number")
