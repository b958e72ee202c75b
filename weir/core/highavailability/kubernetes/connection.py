"""Where the Kubernetes API server is and how to prove who we are, as client-go finds it:
inside a pod, the pod's ServiceAccount (its token, the cluster's CA and the API server's
address from the environment the kubelet sets); outside, a kubeconfig file
(``kubernetes.config.file``, else ``$KUBECONFIG``, else ``~/.kube/config``) and its context
(``kubernetes.context``, else its current one).

What a kubeconfig may use here: the cluster's ``server``, ``certificate-authority`` or
``-data`` and ``insecure-skip-tls-verify``; the user's ``token``, ``tokenFile``, or
``client-certificate``/``client-key`` (or their ``-data``). Plugins that run a program to
get a token (``exec``, ``auth-provider``: the clouds' kubeconfigs) are not run: the error
says to give a token instead. Inline data goes to files of a private temporary directory,
removed by ``close()``.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from weir.core import config as cfg
from weir.core.errors import ConfigurationError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True, slots=True)
class KubernetesConnection:
    server: str
    """``https://host:port`` of the API server."""
    ca_file: str | None = None
    verify: bool = True
    token: str | None = None
    token_file: str | None = None
    """Read again before each request: a pod's ServiceAccount token is rotated by the
    kubelet (bound tokens expire within hours)."""
    client_cert: str | None = None
    client_key: str | None = None
    source: str = ""
    """Where these settings came from, for error messages."""
    temporary_dir: str | None = None
    """Holds the files written from a kubeconfig's inline data; removed by ``close``."""

    def bearer_token(self) -> str | None:
        if self.token_file:
            try:
                return Path(self.token_file).read_text().strip()
            except OSError as exc:
                msg = f"cannot read the Kubernetes token file {self.token_file!r}: {exc}"
                raise ConfigurationError(msg) from exc
        return self.token

    def close(self) -> None:
        if self.temporary_dir:
            shutil.rmtree(self.temporary_dir, ignore_errors=True)


def resolve_connection(
    config: Mapping[str, str], environment: Mapping[str, str] | None = None
) -> KubernetesConnection:
    """The connection ``config`` and the process's environment describe (see the module
    docstring). Raises ConfigurationError saying what is missing."""
    environment = os.environ if environment is None else environment
    kubeconfig = cfg.get(config, cfg.KUBE_CONFIG_FILE)
    context = cfg.get(config, cfg.KUBE_CONTEXT)
    if kubeconfig:
        return from_kubeconfig(Path(kubeconfig).expanduser(), context)
    if environment.get("KUBERNETES_SERVICE_HOST") and (SERVICE_ACCOUNT_DIR / "token").exists():
        return in_cluster(environment)
    for path in environment.get("KUBECONFIG", "").split(os.pathsep):
        if path and Path(path).is_file():
            return from_kubeconfig(Path(path), context)
    default = Path(environment.get("HOME", "~")).expanduser() / ".kube" / "config"
    if default.is_file():
        return from_kubeconfig(default, context)
    msg = (
        f"{cfg.HA_TYPE.key}: kubernetes needs the Kubernetes API server: run the master in a "
        "pod (its ServiceAccount is used), or set "
        f"{cfg.KUBE_CONFIG_FILE.key} to a kubeconfig (none at $KUBECONFIG or {default})"
    )
    raise ConfigurationError(msg)


def in_cluster(
    environment: Mapping[str, str], account_dir: Path | None = None
) -> KubernetesConnection:
    """The pod's own ServiceAccount, as client-go's ``InClusterConfig``."""
    account_dir = SERVICE_ACCOUNT_DIR if account_dir is None else account_dir
    host = environment.get("KUBERNETES_SERVICE_HOST", "")
    port = environment.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        msg = "KUBERNETES_SERVICE_HOST is not set: this process does not run in a pod"
        raise ConfigurationError(msg)
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    ca = account_dir / "ca.crt"
    return KubernetesConnection(
        server=f"https://{host}:{port}",
        ca_file=str(ca) if ca.exists() else None,
        token_file=str(account_dir / "token"),
        source=f"the pod's ServiceAccount ({account_dir})",
    )


def _named(entries: Any, name: str, kind: str, path: Path) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            found = entry.get(kind)
            return found if isinstance(found, dict) else {}
    msg = f"kubeconfig {path}: no {kind} named {name!r}"
    raise ConfigurationError(msg)


def from_kubeconfig(path: Path, context: str = "") -> KubernetesConnection:
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        msg = f"cannot read the kubeconfig {path}: {exc}"
        raise ConfigurationError(msg) from exc
    if not isinstance(document, dict):
        msg = f"kubeconfig {path} is not a kubeconfig (no clusters, users, contexts)"
        raise ConfigurationError(msg)
    context_name = context or str(document.get("current-context") or "")
    if not context_name:
        msg = f"kubeconfig {path} has no current-context; set {cfg.KUBE_CONTEXT.key}"
        raise ConfigurationError(msg)
    chosen = _named(document.get("contexts"), context_name, "context", path)
    cluster = _named(document.get("clusters"), str(chosen.get("cluster", "")), "cluster", path)
    user = (
        _named(document.get("users"), str(chosen["user"]), "user", path)
        if chosen.get("user")
        else {}
    )
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        msg = f"kubeconfig {path}: cluster of context {context_name!r} has no https server"
        raise ConfigurationError(msg)
    if "exec" in user or "auth-provider" in user:
        msg = (
            f"kubeconfig {path}: user of context {context_name!r} gets its credentials from "
            "a plugin (exec or auth-provider), which Weir does not run; give it a token "
            "(e.g. of a ServiceAccount: kubectl create token NAME) or a client certificate"
        )
        raise ConfigurationError(msg)
    base = path.parent
    temporary: list[str] = []

    def file_of(entry: dict[str, Any], key: str) -> str | None:
        data = entry.get(f"{key}-data")
        if data:
            if not temporary:
                temporary.append(tempfile.mkdtemp(prefix="weir-kubeconfig-"))
            target = Path(temporary[0]) / key
            target.write_bytes(base64.b64decode(data))
            target.chmod(0o600)
            return str(target)
        value = entry.get(key)
        return str((base / str(value)).expanduser()) if value else None

    token_file = user.get("tokenFile")
    return KubernetesConnection(
        server=server.rstrip("/"),
        ca_file=file_of(cluster, "certificate-authority"),
        verify=not cluster.get("insecure-skip-tls-verify", False),
        token=str(user["token"]) if user.get("token") else None,
        token_file=str(base / str(token_file)) if token_file else None,
        client_cert=file_of(user, "client-certificate"),
        client_key=file_of(user, "client-key"),
        source=f"kubeconfig {path}, context {context_name}",
        temporary_dir=temporary[0] if temporary else None,
    )
