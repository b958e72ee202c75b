"""``weir kubernetes-session``: start a Weir session cluster on Kubernetes without Helm, find
one, attach to it or stop it, as Flink's ``kubernetes-session.sh`` does.

    weir kubernetes-session -Dkubernetes.cluster-id=orders -Dkubernetes.namespace=streaming
    weir kubernetes-session ... --dry-run > orders.yaml    # every manifest, nothing applied
    weir kubernetes-session -Dkubernetes.cluster-id=orders -Dexecution.attached=true
    echo stop | weir kubernetes-session -Dkubernetes.cluster-id=orders -Dexecution.attached=true
    weir list --target kubernetes-session -Dkubernetes.cluster-id=orders

A session whose ``<cluster-id>-rest`` Service exists is found, not created again. New
ones are the objects of ``kubernetes_manifests``, applied with ``kubectl apply`` in two
steps: all of them, then, once the Deployment has a uid, all but the Deployment again with
the Deployment as their owner. ``kubectl delete deployment/<cluster-id>`` then deletes
the whole cluster: the master pod with the Deployment, the TaskManager pods with the
master pod, and the Services, ConfigMap and RBAC objects with the Deployment. Detached
(the default) the command prints where the session is and exits; attached
(``execution.attached: true``) it then reads commands: ``stop`` deletes the session,
``quit`` leaves it running, ``help`` lists them; the end of input is a ``quit``.

Clients reach a session's Dispatcher (``--target kubernetes-session``) through its REST
Service as Flink's do: a NodePort at a node's address
(``kubernetes.rest-service.exposed.node-port-address-type``), a LoadBalancer at its
ingress, a ClusterIP Service at its DNS name, which answers only inside the cluster (from
outside, ``kubectl port-forward`` and ``-m``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from weir.client.kubernetes_manifests import (
    Application,
    generated_cluster_id,
    manifests_yaml,
    render_manifests,
)
from weir.core import config as cfg
from weir.core.errors import WeirError

# kubectl answers in seconds; a cluster whose API server does not answer in this long
# is not one to start a session on.
_KUBECTL_TIMEOUT_S = 120
# How often an attached client checks that its session still exists.
_WATCH_PERIOD_S = 5.0
# A new session is waited for until its master is ready (and its first TaskManager pods
# run): seconds once the image is on the node, minutes when it is pulled first. A pod
# that cannot start says so much sooner, and that ends the wait.
START_TIMEOUT_S = 600.0
_POLL_S = 1.0
# Container states that will not get better by waiting.
_BAD_WAITING = {
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
    "RunContainerError",
}
HELP = """Available commands:
help - show these commands
stop - stop the session (delete its Deployment, and with it every pod of it)
quit - leave attach mode; the session keeps running"""


def session_config(conf: Mapping[str, str], dynamic: Sequence[tuple[str, str]]) -> dict[str, str]:
    """The configuration file's entries with the ``-D`` ones over them, and a cluster id
    made up when none is given. Raises ConfigurationError on a bad key or value."""
    entries = dict(conf)
    entries.update(cfg.validate(dict(dynamic)))
    if not cfg.get(entries, cfg.KUBERNETES_CLUSTER_ID):
        entries[cfg.KUBERNETES_CLUSTER_ID.key] = generated_cluster_id()
    return entries


def _kubectl(config: Mapping[str, str]) -> list[str]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        msg = (
            "kubectl is not on the PATH: install it, or write the manifests with --dry-run "
            "and apply them with your own tools"
        )
        raise WeirError(msg)
    command = [kubectl]
    if cfg.get(config, cfg.KUBE_CONFIG_FILE):
        command += ["--kubeconfig", cfg.get(config, cfg.KUBE_CONFIG_FILE)]
    if cfg.get(config, cfg.KUBE_CONTEXT):
        command += ["--context", cfg.get(config, cfg.KUBE_CONTEXT)]
    return command


def _run(command: list[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            command,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=_KUBECTL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        msg = f"{' '.join(command[1:])} did not answer within {_KUBECTL_TIMEOUT_S} s"
        raise WeirError(msg) from exc
    if done.returncode != 0:
        msg = f"kubectl {' '.join(command[1:])} failed ({done.returncode}): {done.stderr.strip()}"
        raise WeirError(msg)
    return done.stdout


def _names(config: Mapping[str, str]) -> tuple[str, str]:
    return cfg.get(config, cfg.KUBERNETES_CLUSTER_ID), cfg.get(config, cfg.KUBERNETES_NAMESPACE)


def rest_service(config: Mapping[str, str]) -> dict[str, Any] | None:
    """The session's REST Service as the API server has it, or None when there is none."""
    cluster_id, namespace = _names(config)
    get = ["-n", namespace, "get", "service", f"{cluster_id}-rest", "--ignore-not-found"]
    out = _run([*_kubectl(config), *get, "-o", "json"]).strip()
    return json.loads(out) if out else None


def _node_address(config: Mapping[str, str]) -> str:
    wanted = cfg.get(config, cfg.NODE_PORT_ADDRESS_TYPE)
    nodes = json.loads(_run([*_kubectl(config), "get", "nodes", "-o", "json"]))["items"]
    for node in nodes:
        for address in node.get("status", {}).get("addresses", []):
            if address.get("type") == wanted:
                return str(address["address"])
    msg = (
        f"no node has an address of type {wanted} to reach the NodePort Service at; set "
        f"{cfg.NODE_PORT_ADDRESS_TYPE.key} to the other type, or use kubectl port-forward"
    )
    raise WeirError(msg)


def service_endpoint(config: Mapping[str, str], service: Mapping[str, Any], port_name: str) -> str:
    """``host:port`` of a port of the REST Service (``rpc``: the Dispatcher, ``rest``: the
    REST API) as a client reaches it, by the Service's type, as Flink's client does."""
    cluster_id, namespace = _names(config)
    spec = service["spec"]
    (port,) = [p for p in spec["ports"] if p.get("name") == port_name]
    kind = spec.get("type", "ClusterIP")
    if kind == "NodePort":
        return f"{_node_address(config)}:{port['nodePort']}"
    if kind == "LoadBalancer":
        ingress = (service.get("status", {}).get("loadBalancer", {}).get("ingress")) or []
        if not ingress:
            msg = (
                f"the LoadBalancer Service {cluster_id}-rest has no address yet (kubectl -n "
                f"{namespace} get service {cluster_id}-rest); try again once it has one"
            )
            raise WeirError(msg)
        host = ingress[0].get("ip") or ingress[0].get("hostname")
        return f"{host}:{port['port']}"
    return f"{cluster_id}-rest.{namespace}.svc:{port['port']}"


def dispatcher_address(config: Mapping[str, str]) -> str:
    """Where the session of ``kubernetes.cluster-id`` takes jobs (``--target
    kubernetes-session``); raises WeirError when there is no such session."""
    cluster_id, namespace = _names(config)
    if not cluster_id:
        msg = f"which session? give its id: -D{cfg.KUBERNETES_CLUSTER_ID.key}=<cluster-id>"
        raise WeirError(msg)
    service = rest_service(config)
    if service is None:
        msg = (
            f"no Weir session cluster {cluster_id!r} in namespace {namespace!r} (its Service "
            f"{cluster_id}-rest does not exist); start one with kubernetes-session.sh "
            f"-D{cfg.KUBERNETES_CLUSTER_ID.key}={cluster_id}"
        )
        raise WeirError(msg)
    return service_endpoint(config, service, "rpc")


def describe(config: Mapping[str, str], service: Mapping[str, Any]) -> str:
    cluster_id, namespace = _names(config)
    rpc_port = cfg.get(config, cfg.JOBMANAGER_PORT)
    rest_port = cfg.get(config, cfg.REST_PORT)
    inside = f"{cluster_id}-rest.{namespace}.svc"
    lines = [
        f"From inside the cluster: weir run -m {inside}:{rpc_port} job.py, "
        f"dashboard at http://{inside}:{rest_port}"
    ]
    kind = service["spec"].get("type", "ClusterIP")
    if kind in ("NodePort", "LoadBalancer"):
        try:
            lines.append(
                f"From outside ({kind}): weir run -m {service_endpoint(config, service, 'rpc')}"
                f" job.py (or --target kubernetes-session -D{cfg.KUBERNETES_CLUSTER_ID.key}="
                f"{cluster_id}), dashboard at http://{service_endpoint(config, service, 'rest')}"
            )
        except WeirError as exc:
            lines.append(f"From outside: {exc}")
    lines.append(
        f"From here: kubectl -n {namespace} port-forward service/{cluster_id}-rest "
        f"{rpc_port} {rest_port}, then weir run -m 127.0.0.1:{rpc_port} job.py"
    )
    lines.append(
        f"Stop it (every pod, Service and ConfigMap): kubectl -n {namespace} delete "
        f"deployment/{cluster_id}, or attach (-Dexecution.attached=true) and type stop"
    )
    return "\n".join(lines) + "\n"


def create_cluster(config: Mapping[str, str], application: Application | None = None) -> None:
    """Apply the cluster's objects (those of an application cluster with ``application``),
    then all but the Deployment again, owned by it."""
    kubectl = _kubectl(config)
    cluster_id, namespace = _names(config)
    manifests = render_manifests(config, application=application)
    _run([*kubectl, "apply", "-f", "-"], manifests_yaml(manifests))
    get_uid = ["-n", namespace, "get", f"deployment/{cluster_id}", "-o", "jsonpath={.metadata.uid}"]
    uid = _run([*kubectl, *get_uid]).strip()
    owned = [m for m in render_manifests(config, uid, application) if m["kind"] != "Deployment"]
    _run([*kubectl, "apply", "-f", "-"], manifests_yaml(owned))


class NotStarting(WeirError):
    """A pod of a new session cannot start; the message says which and why."""


def _kubectl_json(config: Mapping[str, str], *args: str) -> dict[str, Any]:
    _cluster_id, namespace = _names(config)
    return dict(json.loads(_run([*_kubectl(config), "-n", namespace, *args, "-o", "json"])))


def _pod_problem(config: Mapping[str, str], pod: Mapping[str, Any]) -> str | None:
    """Why a pod of the session cannot start, or None while it may."""
    name = pod["metadata"]["name"]
    status = pod.get("status", {})
    for condition in status.get("conditions", []):
        if (
            condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return f"pod {name} cannot be scheduled: {condition.get('message', '').strip()}"
    for container in status.get("containerStatuses", []):
        waiting = container.get("state", {}).get("waiting") or {}
        reason = waiting.get("reason", "")
        if reason not in _BAD_WAITING:
            continue
        if reason == "CrashLoopBackOff":
            ended = container.get("lastState", {}).get("terminated") or {}
            _cluster_id, namespace = _names(config)
            try:
                log = _run(
                    [*_kubectl(config), "-n", namespace, "logs", name, "--previous", "--tail=15"]
                )
            except WeirError:
                log = ""
            return (
                f"the {container['name']} container of pod {name} keeps exiting (code "
                f"{ended.get('exitCode', '?')}); its last lines:\n{log.rstrip()}"
            )
        detail = waiting.get("message", "").strip()
        return f"pod {name} cannot start its {container['name']} container: {reason}: {detail}"
    return None


def await_ready(config: Mapping[str, str], timeout_s: float = START_TIMEOUT_S) -> None:
    """Wait until the session's master is ready and the TaskManager pods it starts with
    (``resourcemanager.taskmanager.min``) run. Raises ``NotStarting`` as soon as a pod
    cannot start (it cannot be scheduled, its image cannot be had, it keeps crashing, the
    Deployment cannot create it), WeirError at the timeout."""
    cluster_id, namespace = _names(config)
    taskmanagers = cfg.get(config, cfg.TASKMANAGERS_MIN)
    deadline = time.monotonic() + timeout_s
    while True:
        deployment = _kubectl_json(config, "get", "deployment", cluster_id)
        for condition in deployment.get("status", {}).get("conditions", []):
            if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
                detail = condition.get("message", "").strip()
                msg = f"the Deployment {cluster_id} cannot create its pod: {detail}"
                raise NotStarting(msg)
        pods = _kubectl_json(config, "get", "pods", "-l", f"app={cluster_id}")["items"]
        for pod in pods:
            problem = _pod_problem(config, pod)
            if problem:
                raise NotStarting(problem)
        running = [
            p
            for p in pods
            if p["metadata"].get("labels", {}).get("component") == "taskmanager"
            and p.get("status", {}).get("phase") == "Running"
        ]
        if deployment.get("status", {}).get("readyReplicas") and len(running) >= taskmanagers:
            return
        if time.monotonic() > deadline:
            states = ", ".join(
                f"{p['metadata']['name']} {p.get('status', {}).get('phase')}" for p in pods
            )
            msg = (
                f"the session {cluster_id} is not ready after {timeout_s:.0f} s "
                f"({states or 'no pods'}); it keeps starting: kubectl -n {namespace} "
                f"describe pods -l app={cluster_id}"
            )
            raise WeirError(msg)
        time.sleep(_POLL_S)  # polling the API server; the pods' states decide


def start_session(
    config: Mapping[str, str],
    dry_run: bool,
    out: TextIO = sys.stdout,
    commands: TextIO | None = None,
) -> int:
    """Print the manifests (``dry_run``), or find or create the session, and then, attached,
    read commands from ``commands`` (standard input). Returns the exit code; raises
    WeirError.

    A new session is waited for until it is ready; one that cannot start (a pod that
    cannot be scheduled, an image that cannot be had, a master that keeps exiting) is
    deleted again and the error says why."""
    if dry_run:
        out.write(manifests_yaml(render_manifests(config)))
        return 0
    # Checked before anything is applied: a bad value fails here, not in the pod.
    render_manifests(config)
    cluster_id, namespace = _names(config)
    service = rest_service(config)
    if service is None:
        create_cluster(config)
        out.write(f"Weir session cluster {cluster_id} created in namespace {namespace}.\n")
        out.flush()
        try:
            await_ready(config)
        except NotStarting as exc:
            stop_session(config, out)
            msg = f"the session {cluster_id} cannot start, and was deleted: {exc}"
            raise WeirError(msg) from exc
        service = rest_service(config)
        if service is None:
            msg = f"the Service {cluster_id}-rest was applied but the API server does not have it"
            raise WeirError(msg)
        out.write("Its master is ready.\n")
    else:
        out.write(f"Found the Weir session cluster {cluster_id} in namespace {namespace}.\n")
    out.write(describe(config, service))
    out.flush()
    if not cfg.get(config, cfg.ATTACHED):
        return 0
    return _stay_attached(config, out, commands or sys.stdin)


def stop_session(config: Mapping[str, str], out: TextIO = sys.stdout) -> None:
    """Delete the session's Deployment: Kubernetes deletes the rest with it (the master
    pod, its TaskManager pods, the Services, the ConfigMap and the RBAC objects)."""
    cluster_id, namespace = _names(config)
    _run([*_kubectl(config), "-n", namespace, "delete", "deployment", cluster_id])
    out.write(f"Weir session cluster {cluster_id} in namespace {namespace} is being deleted.\n")
    out.flush()


def _stay_attached(config: Mapping[str, str], out: TextIO, commands: TextIO) -> int:
    """Read ``stop``/``quit``/``help`` until one ends attach mode; leave, saying so, when
    the session is deleted meanwhile."""
    out.write("Attached: type help for the commands.\n")
    out.flush()
    words: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in commands:
            word = line.strip().lower()
            if not word:
                continue
            if word == "help":
                out.write(HELP + "\n")
                out.flush()
                continue
            if word in ("stop", "quit"):
                words.append(word)
                break
            out.write(f"Unknown command {word!r}. Type help for the commands.\n")
            out.flush()
        ready.set()

    threading.Thread(target=read, name="weir-kubernetes-session-stdin", daemon=True).start()
    while not ready.wait(_WATCH_PERIOD_S):
        if rest_service(config) is None:
            cluster_id, namespace = _names(config)
            out.write(f"The Weir session cluster {cluster_id} in {namespace} is gone.\n")
            return 1
    if words == ["stop"]:
        stop_session(config, out)
    else:
        out.write("Detached; the session keeps running.\n")
    return 0
