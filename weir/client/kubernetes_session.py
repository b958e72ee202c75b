"""``weir kubernetes-session``: start a Weir session cluster on Kubernetes without Helm, as
Flink's ``kubernetes-session.sh`` does.

    weir kubernetes-session -Dkubernetes.cluster-id=orders -Dkubernetes.namespace=streaming
    weir kubernetes-session ... --dry-run > orders.yaml    # every manifest, nothing applied

The objects are those of ``kubernetes_manifests``, applied with ``kubectl apply`` in two
steps: all of them, then, once the Deployment has a uid, all but the Deployment again with
the Deployment as their owner. ``kubectl delete deployment/<cluster-id>`` then deletes
the whole cluster: the master pod with the Deployment, the TaskManager pods with the
master pod, and the Services, ConfigMap and RBAC objects with the Deployment.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from weir.client.kubernetes_manifests import generated_cluster_id, manifests_yaml, render_manifests
from weir.core import config as cfg
from weir.core.errors import WeirError

# kubectl answers in seconds; a cluster whose API server does not answer in this long
# is not one to start a session on.
_KUBECTL_TIMEOUT_S = 120


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


def start_session(config: Mapping[str, str], dry_run: bool, out: TextIO = sys.stdout) -> None:
    """Print the manifests (``dry_run``) or apply them; raises WeirError."""
    manifests = render_manifests(config)
    if dry_run:
        out.write(manifests_yaml(manifests))
        return
    kubectl = _kubectl(config)
    cluster_id = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    namespace = cfg.get(config, cfg.KUBERNETES_NAMESPACE)
    _run([*kubectl, "apply", "-f", "-"], manifests_yaml(manifests))
    get_uid = ["-n", namespace, "get", f"deployment/{cluster_id}", "-o", "jsonpath={.metadata.uid}"]
    uid = _run([*kubectl, *get_uid]).strip()
    owned = [m for m in render_manifests(config, uid) if m["kind"] != "Deployment"]
    _run([*kubectl, "apply", "-f", "-"], manifests_yaml(owned))
    rest_port = cfg.get(config, cfg.REST_PORT)
    rpc_port = cfg.get(config, cfg.JOBMANAGER_PORT)
    service = f"{cluster_id}-rest"
    out.write(
        f"Weir session cluster {cluster_id} created in namespace {namespace}.\n"
        f"From inside the cluster: weir run -m {service}.{namespace}.svc:{rpc_port} job.py, "
        f"dashboard at http://{service}.{namespace}.svc:{rest_port}\n"
        f"From here: kubectl -n {namespace} port-forward service/{service} "
        f"{rpc_port} {rest_port}, then weir run -m 127.0.0.1:{rpc_port} job.py\n"
        f"Stop it (every pod, Service and ConfigMap): "
        f"kubectl -n {namespace} delete deployment/{cluster_id}\n"
    )
