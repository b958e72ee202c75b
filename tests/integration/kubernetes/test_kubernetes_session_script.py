"""``deploy/bin/kubernetes-session.sh`` (``weir kubernetes-session``): its ``--dry-run``
output, validated strictly against the Kubernetes API schemas, and what it asks kubectl
to do, fast and without a cluster: the kubectl these tests put first on the PATH is a
stand-in script that writes down its arguments and input and answers just enough (a
Deployment's uid, a ready Deployment, the REST Service once applied).
tests/e2e/test_kubernetes_*.py run the script against a real API server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_schemas import validate_all

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "deploy" / "bin" / "kubernetes-session.sh"
UID = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
HA_TLS = [
    "-Dkubernetes.jobmanager.replicas=2",
    "-Dhigh-availability.type=zookeeper",
    "-Dhigh-availability.zookeeper.quorum=zk-0.zk:2181",
    "-Dhigh-availability.storageDir=file:///opt/weir/storage/ha",
    "-Dkubernetes.secrets=orders-tls:/opt/weir/certs",
    "-Dkubernetes.persistent-volume-claims=orders-storage:/opt/weir/storage",
    "-Dkubernetes.auth-token.secret=orders-token",
    "-Dsecurity.ssl.internal.enabled=true",
    "-Dsecurity.ssl.internal.cert=/opt/weir/certs/internal.pem",
    "-Dsecurity.ssl.internal.key=/opt/weir/certs/internal-key.pem",
    "-Dsecurity.ssl.internal.trust-cert=/opt/weir/certs/ca.pem",
]
# What stands in for kubectl: each call appends {"args": [...], "stdin": "..."} to calls.jsonl;
# the session's REST Service exists once something was applied.
FAKE_KUBECTL = """#!/usr/bin/env bash
stdin=""
if [[ " $* " == *" apply "* ]]; then stdin=$(cat); touch "$KUBECTL_CALLS.applied"; fi
python3 -c 'import json, sys; print(json.dumps({"args": sys.argv[2:], "stdin": sys.argv[1]}))' \\
    "$stdin" "$@" >> "$KUBECTL_CALLS"
if [[ " $* " == *" get service "* ]]; then
    if [[ -e "$KUBECTL_CALLS.applied" ]]; then printf '%s' "$REST_SERVICE"; fi
elif [[ " $* " == *" get deployment "* ]]; then
    printf '{"status": {"readyReplicas": 1}}'
elif [[ " $* " == *" get pods "* ]]; then
    printf '{"items": []}'
elif [[ " $* " == *" get "* ]]; then
    printf '%s' "$DEPLOYMENT_UID"
fi
"""
REST_SERVICE = {
    "spec": {
        "type": "ClusterIP",
        "ports": [{"name": "rest", "port": 8081}, {"name": "rpc", "port": 6123}],
    }
}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env or dict(os.environ),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc is not None]


@pytest.mark.parametrize("extra", [[], HA_TLS], ids=["defaults", "ha-tls"])
def test_dry_run_prints_every_manifest_and_each_passes_strict_validation(
    extra: list[str],
) -> None:
    # With the repository's own weir-conf.yaml (deploy/conf), whose networking keys are
    # for one host: the session replaces them with the pod's.
    done = run(
        "-Dkubernetes.cluster-id=orders", "-Dkubernetes.namespace=streaming", *extra, "--dry-run"
    )
    assert done.returncode == 0, done.stderr
    manifests = documents(done.stdout)
    checked = validate_all(manifests)
    assert "Deployment/orders" in checked
    assert all(m["metadata"]["namespace"] == "streaming" for m in manifests)
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    conf = yaml.safe_load(config_map["data"]["weir-conf.yaml"])
    assert conf["taskmanager.host"] == ""
    assert conf["jobmanager.bind-host"] == "0.0.0.0"


def test_a_session_without_a_cluster_id_gets_one() -> None:
    done = run("--dry-run")
    assert done.returncode == 0, done.stderr
    (deployment,) = [m for m in documents(done.stdout) if m["kind"] == "Deployment"]
    assert deployment["metadata"]["name"].startswith("weir-")


def test_a_bad_key_is_named_and_nothing_is_applied(tmp_path: Path) -> None:
    done = run("-Dkubernetes.cluster-id=Orders", "--dry-run")
    assert done.returncode == 1
    assert "kubernetes.cluster-id" in done.stderr
    assert done.stdout == ""


@pytest.fixture
def kubectl(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kubectl").write_text(FAKE_KUBECTL)
    (bin_dir / "kubectl").chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "KUBECTL_CALLS": str(tmp_path / "calls.jsonl"),
        "DEPLOYMENT_UID": UID,
        "REST_SERVICE": json.dumps(REST_SERVICE),
    }


def calls(env: dict[str, str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(env["KUBECTL_CALLS"]).read_text().splitlines()]


def test_apply_creates_everything_then_makes_the_deployment_its_owner(
    kubectl: dict[str, str],
) -> None:
    done = run(
        "-Dkubernetes.cluster-id=orders",
        "-Dkubernetes.namespace=streaming",
        "-Dkubernetes.context=production",
        env=kubectl,
    )
    assert done.returncode == 0, done.stderr
    lookup, first, get, second, ready, pods, found = calls(kubectl)
    # The session is waited for: its Deployment, then its pods.
    assert ready["args"][-5:] == ["get", "deployment", "orders", "-o", "json"]
    assert pods["args"][-6:] == ["get", "pods", "-l", "app=orders", "-o", "json"]
    # No session of that id yet: it is created, then found.
    for call in (lookup, found):
        assert call["args"] == [
            "--context",
            "production",
            "-n",
            "streaming",
            "get",
            "service",
            "orders-rest",
            "--ignore-not-found",
            "-o",
            "json",
        ]
    assert first["args"] == ["--context", "production", "apply", "-f", "-"]
    applied = documents(first["stdin"])
    assert {m["kind"] for m in applied} >= {"Deployment", "Role", "ConfigMap", "Service"}
    assert get["args"] == [
        "--context",
        "production",
        "-n",
        "streaming",
        "get",
        "deployment/orders",
        "-o",
        "jsonpath={.metadata.uid}",
    ]
    owned = documents(second["stdin"])
    assert len(owned) == len(applied) - 1
    assert "Deployment" not in {m["kind"] for m in owned}
    validate_all(owned)
    for m in owned:
        assert m["metadata"]["ownerReferences"] == [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "orders", "uid": UID}
        ]
    assert "weir run -m orders-rest.streaming.svc:6123" in done.stdout
    assert "kubectl -n streaming delete deployment/orders" in done.stdout


def test_a_session_that_exists_is_found_and_not_applied_again(kubectl: dict[str, str]) -> None:
    Path(kubectl["KUBECTL_CALLS"] + ".applied").touch()
    done = run("-Dkubernetes.cluster-id=orders", "-Dkubernetes.namespace=streaming", env=kubectl)
    assert done.returncode == 0, done.stderr
    assert "Found the Weir session cluster orders in namespace streaming" in done.stdout
    assert [c["args"][3] for c in calls(kubectl)] == ["service"]


def test_a_kubectl_failure_is_reported_with_its_message(
    kubectl: dict[str, str], tmp_path: Path
) -> None:
    failing = tmp_path / "bin" / "kubectl"
    failing.write_text("#!/usr/bin/env bash\necho 'error: You must be logged in' >&2\nexit 1\n")
    done = run("-Dkubernetes.cluster-id=orders", env=kubectl)
    assert done.returncode == 1
    assert "failed (1): error: You must be logged in" in done.stderr


def test_without_kubectl_the_error_points_at_dry_run(tmp_path: Path) -> None:
    # A PATH with every command of the PATH but kubectl (this machine may have one).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not Path(directory).is_dir():
            continue
        for command in Path(directory).iterdir():
            target = bin_dir / command.name
            if command.name != "kubectl" and not target.exists():
                target.symlink_to(command)
    done = run("-Dkubernetes.cluster-id=orders", env={**os.environ, "PATH": str(bin_dir)})
    assert done.returncode == 1
    assert "kubectl is not on the PATH" in done.stderr
    assert "--dry-run" in done.stderr
