"""The Helm chart (deploy/kubernetes/weir): ``helm lint --strict``, ``helm template`` with
the default values and with HA, TLS, a token, a claim and a LoadBalancer, every rendered
manifest validated strictly against the Kubernetes API schemas of the three newest minor
versions kubernetes-validate bundles, the weir-conf.yaml it renders checked by Weir's own
configuration rules, and the chart held to ``weir kubernetes-session``'s objects.

No API server is used here: nothing is installed (tests/e2e/test_kubernetes_long.py
installs the chart on a real cluster). helm comes from ``make helm`` (``go install`` of
Helm's module into a cache outside the repository), given as WEIR_HELM, or from the PATH;
without it these tests are skipped, saying so."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_schemas import KUBERNETES_VERSIONS, validate_all

from weir.client.kubernetes_manifests import CONF_FILE, POD_TEMPLATE_FILE, render_manifests
from weir.core import config as cfg

CHART = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes" / "weir"
HA_TLS_VALUES = [
    "highAvailability.enabled=true",
    "highAvailability.zookeeperQuorum=zk-0.zk:2181\\,zk-1.zk:2181\\,zk-2.zk:2181",
    "highAvailability.storageDir=file:///opt/weir/storage/ha",
    "tls.enabled=true",
    "tls.secretName=orders-tls",
    "authToken.secretName=orders-token",
    "storage.persistentVolumeClaim.enabled=true",
    "rest.serviceType=LoadBalancer",
    "image.repository=registry.example/weir",
    "image.pullSecrets[0]=regcred",
    "taskManagers.count=4",
    "taskManagers.slots=2",
    "weirConf.execution\\.checkpointing\\.dir=file:///opt/weir/storage/checkpoints",
]
# Two masters electing their leader through a ConfigMap: no ZooKeeper.
KUBERNETES_HA_VALUES = [
    "highAvailability.enabled=true",
    "highAvailability.type=kubernetes",
    "highAvailability.storageDir=file:///opt/weir/storage/ha",
    "storage.persistentVolumeClaim.enabled=true",
]
# The HA example of the chart: storage and credentials on S3.
HA_S3_EXAMPLE = CHART.parent / "examples" / "ha-s3-values.yaml"
VALUE_SETS = {
    "defaults": [],
    "ha-tls": HA_TLS_VALUES,
    "ha-s3": [f"--values={HA_S3_EXAMPLE}"],
    "kubernetes-ha": KUBERNETES_HA_VALUES,
}


def helm_args(values: list[str]) -> list[str]:
    """``--set`` for each value, or the value itself where it is an option (``--values``)."""
    return [
        arg for value in values for arg in ([value] if value.startswith("--") else ["--set", value])
    ]


@pytest.fixture(scope="module")
def helm() -> str:
    found = os.environ.get("WEIR_HELM") or shutil.which("helm")
    if not found or not os.access(found, os.X_OK):
        pytest.skip(
            "no helm here: `make helm` builds it with `go install helm.sh/helm/v3/cmd/helm` "
            "when Go and the Go module proxy are available (make test does so)"
        )
    return found


def template(helm: str, values: list[str]) -> list[dict[str, Any]]:
    sets = helm_args(values)
    command = [helm, "template", "orders", str(CHART), "-n", "streaming"]
    done = subprocess.run(
        [*command, "--kube-version", f"{KUBERNETES_VERSIONS[-1]}.0", *sets],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="module")
def rendered(helm: str) -> dict[str, list[dict[str, Any]]]:
    return {name: template(helm, values) for name, values in VALUE_SETS.items()}


def test_helm_lint_finds_nothing(helm: str) -> None:
    done = subprocess.run(
        [helm, "lint", "--strict", str(CHART), "--kube-version", f"{KUBERNETES_VERSIONS[-1]}.0"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for values in VALUE_SETS.values():
        sets = helm_args(values)
        done = subprocess.run(
            [helm, "lint", "--strict", str(CHART), *sets],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("values", list(VALUE_SETS))
def test_every_rendered_manifest_passes_strict_validation(
    rendered: dict[str, list[dict[str, Any]]], values: str
) -> None:
    checked = validate_all(rendered[values])
    expected = {
        "ServiceAccount/orders",
        "Role/orders",
        "RoleBinding/orders",
        "ConfigMap/orders-config",
        f"ConfigMap/orders-config/{POD_TEMPLATE_FILE}",
        "Service/orders-driver",
        "Service/orders-rest",
        "Deployment/orders",
        "PodDisruptionBudget/orders",
    }
    if values in ("ha-tls", "kubernetes-ha"):
        expected.add("PersistentVolumeClaim/orders-storage")
    assert set(checked) == expected


def chart_conf(manifests: list[dict[str, Any]]) -> dict[str, str]:
    (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    return yaml.safe_load(config_map["data"][CONF_FILE])


@pytest.mark.parametrize("values", list(VALUE_SETS))
def test_the_rendered_weir_conf_passes_weirs_own_checks(
    rendered: dict[str, list[dict[str, Any]]], values: str
) -> None:
    conf = cfg.validate(chart_conf(rendered[values]))
    cfg.check_relations(conf)
    if values == "ha-tls":
        assert conf["high-availability.type"] == "zookeeper"
        assert conf["kubernetes.jobmanager.replicas"] == "2"
        assert conf["security.ssl.internal.cert"] == "/opt/weir/certs/internal.pem"
        assert cfg.get(conf, cfg.TASKMANAGER_PROCESS_SIZE) == 2 << 30
        assert conf["resourcemanager.taskmanager.min"] == "4"
        assert conf["execution.checkpointing.dir"] == "file:///opt/weir/storage/checkpoints"
    if values == "kubernetes-ha":
        assert conf["high-availability.type"] == "kubernetes"
        assert conf["kubernetes.cluster-id"] == "orders"  # its ConfigMap: orders-cluster-config-map
        assert conf["kubernetes.jobmanager.replicas"] == "2"
        assert "high-availability.zookeeper.quorum" not in conf
    if values == "ha-s3":
        assert conf["high-availability.type"] == "zookeeper"
        assert conf["kubernetes.jobmanager.replicas"] == "2"
        assert conf["high-availability.storageDir"] == "s3://weir-orders/ha"
        assert conf["execution.checkpointing.dir"] == "s3://weir-orders/checkpoints"
        assert conf["s3.endpoint"] == "http://minio.storage.svc:9000"
        assert cfg.get(conf, cfg.S3_PATH_STYLE_ACCESS) is True
        # No credential in the ConfigMap: only where every pod's environment takes them.
        assert not {cfg.S3_ACCESS_KEY.key, cfg.S3_SECRET_KEY.key} & set(conf)
        assert cfg.parse_env_secret_key_refs(conf["kubernetes.env.secretKeyRef"]) == [
            ("AWS_ACCESS_KEY_ID", "orders-s3", "access-key"),
            ("AWS_SECRET_ACCESS_KEY", "orders-s3", "secret-key"),
        ]


def test_kubernetes_high_availability_needs_a_storage_dir_and_a_known_type(helm: str) -> None:
    for values, error in (
        (["highAvailability.enabled=true", "highAvailability.type=kubernetes"], "storageDir"),
        (
            [
                "highAvailability.enabled=true",
                "highAvailability.type=etcd",
                "highAvailability.storageDir=file:///ha",
            ],
            "expected kubernetes or zookeeper",
        ),
    ):
        sets = helm_args(values)
        done = subprocess.run(
            [
                helm,
                "template",
                "orders",
                str(CHART),
                "--kube-version",
                f"{KUBERNETES_VERSIONS[-1]}.0",
                *sets,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode != 0
        assert error in done.stderr


def test_the_s3_credentials_secret_is_in_the_environment_of_every_pod(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """The HA example's s3.credentialsSecret: the master and the TaskManager pod template
    take AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from it; the defaults take nothing."""
    expected = [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": "orders-s3", "key": key}}}
        for name, key in [
            ("AWS_ACCESS_KEY_ID", "access-key"),
            ("AWS_SECRET_ACCESS_KEY", "secret-key"),
        ]
    ]
    for values, wanted in [("ha-s3", expected), ("defaults", [])]:
        manifests = rendered[values]
        (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
        master_env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        assert [e for e in master_env if e["name"].startswith("AWS_")] == wanted
        (config_map,) = [m for m in manifests if m["kind"] == "ConfigMap"]
        template = yaml.safe_load(config_map["data"][POD_TEMPLATE_FILE])
        assert template["spec"]["containers"][0].get("env", []) == wanted


def _comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """An object without what only Helm adds: its own labels and the config checksum."""
    doc = yaml.safe_load(yaml.safe_dump(doc))
    labels = doc["metadata"].get("labels", {})
    for helm_label in ("app.kubernetes.io/managed-by", "helm.sh/chart"):
        labels.pop(helm_label, None)
    if doc["kind"] == "Deployment":
        doc["spec"]["template"]["metadata"].pop("annotations", None)
    if doc["kind"] == "ConfigMap":
        # The files are compared as what they hold, not as text.
        doc["data"] = {
            CONF_FILE: cfg.validate(yaml.safe_load(doc["data"][CONF_FILE])),
            POD_TEMPLATE_FILE: yaml.safe_load(doc["data"][POD_TEMPLATE_FILE]),
        }
    return doc


@pytest.mark.parametrize("values", list(VALUE_SETS))
def test_the_chart_renders_what_kubernetes_session_applies(
    rendered: dict[str, list[dict[str, Any]]], values: str
) -> None:
    """``weir kubernetes-session`` given the chart's weir-conf.yaml renders the chart's
    objects: one description of a session cluster, two renderers."""
    chart = {
        (d["kind"], d["metadata"]["name"]): _comparable(d)
        for d in rendered[values]
        if d["kind"] != "PersistentVolumeClaim"  # the chart may create the claim
    }
    session = {
        (d["kind"], d["metadata"]["name"]): _comparable(d)
        for d in render_manifests(chart_conf(rendered[values]))
    }
    assert sorted(chart) == sorted(session)
    for key, doc in chart.items():
        assert doc == session[key], key
