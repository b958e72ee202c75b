"""The manifests of ``weir kubernetes-session``, validated strictly against the Kubernetes
API schemas of the three newest minor versions kubernetes-validate bundles (no API server:
the real-cluster tests are in tests/e2e/test_kubernetes_*.py), and what they say."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_schemas import KUBERNETES_VERSIONS, validate_all, validate_strictly

from weir.client.kubernetes_manifests import (
    CONF_FILE,
    MAX_SHIPPED_PROGRAM_BYTES,
    POD_TEMPLATE_FILE,
    ROLE_RULES,
    Application,
    render_manifests,
)
from weir.core import config as cfg
from weir.core.errors import ConfigurationError

DEFAULTS = {"kubernetes.cluster-id": "orders"}
HA_TLS = {
    "kubernetes.cluster-id": "orders",
    "kubernetes.namespace": "streaming",
    "kubernetes.container.image.ref": "registry.example/weir:0.1.0",
    "kubernetes.container.image.pull-secrets": "regcred",
    "kubernetes.jobmanager.replicas": "2",
    "kubernetes.rest-service.exposed.type": "LoadBalancer",
    "kubernetes.secrets": "orders-tls:/opt/weir/certs",
    "kubernetes.persistent-volume-claims": "orders-storage:/opt/weir/storage",
    "kubernetes.auth-token.secret": "orders-token:token",
    "high-availability.type": "zookeeper",
    "high-availability.zookeeper.quorum": "zk-0.zk:2181,zk-1.zk:2181,zk-2.zk:2181",
    "high-availability.storageDir": "file:///opt/weir/storage/ha",
    "execution.checkpointing.dir": "file:///opt/weir/storage/checkpoints",
    "security.ssl.internal.enabled": "true",
    "security.ssl.internal.cert": "/opt/weir/certs/internal.pem",
    "security.ssl.internal.key": "/opt/weir/certs/internal-key.pem",
    "security.ssl.internal.trust-cert": "/opt/weir/certs/ca.pem",
    "security.ssl.rest.enabled": "true",
    "security.ssl.rest.cert": "/opt/weir/certs/rest.pem",
    "security.ssl.rest.key": "/opt/weir/certs/rest-key.pem",
    "security.ssl.rest.trust-cert": "/opt/weir/certs/ca.pem",
    "security.ssl.verify-hostname": "false",
}


def by_kind(manifests: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for m in manifests:
        kinds.setdefault(m["kind"], []).append(m)
    return kinds


def master_container(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = by_kind(manifests)["Deployment"]
    return deployment["spec"]["template"]["spec"]["containers"][0]


def pod_template(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    (config_map,) = by_kind(manifests)["ConfigMap"]
    return yaml.safe_load(config_map["data"][POD_TEMPLATE_FILE])


def test_three_kubernetes_versions_are_checked() -> None:
    assert len(KUBERNETES_VERSIONS) == 3


@pytest.mark.parametrize("config", [DEFAULTS, HA_TLS], ids=["defaults", "ha-tls"])
def test_every_manifest_passes_strict_validation(config: dict[str, str]) -> None:
    checked = validate_all(render_manifests(config))
    assert sorted(checked) == sorted(
        [
            "ServiceAccount/orders",
            "Role/orders",
            "RoleBinding/orders",
            "ConfigMap/orders-config",
            f"ConfigMap/orders-config/{POD_TEMPLATE_FILE}",
            "Service/orders-driver",
            "Service/orders-rest",
            "Deployment/orders",
            "PodDisruptionBudget/orders",
        ]
    )


def test_owned_manifests_pass_strict_validation_and_name_the_deployment() -> None:
    manifests = render_manifests(DEFAULTS, deployment_uid="0b7c5e9e-1d2f-4a53-9f3c-2c1b0a9d8e7f")
    validate_all(manifests)
    for m in manifests:
        owners = m["metadata"].get("ownerReferences")
        if m["kind"] == "Deployment":
            assert owners is None
        else:
            assert owners == [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "orders",
                    "uid": "0b7c5e9e-1d2f-4a53-9f3c-2c1b0a9d8e7f",
                }
            ]


def test_strict_validation_refuses_an_unknown_field() -> None:
    # The check above is only worth something if an unknown field fails it.
    deployment = copy.deepcopy(by_kind(render_manifests(DEFAULTS))["Deployment"][0])
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(AssertionError, match="readinesProbe"):
        validate_strictly(deployment, KUBERNETES_VERSIONS[-1])


def test_the_configuration_is_a_weir_conf_yaml_for_a_master_in_a_pod() -> None:
    (config_map,) = by_kind(render_manifests(HA_TLS))["ConfigMap"]
    conf = cfg.validate(yaml.safe_load(config_map["data"][CONF_FILE]))
    assert conf["spark.master"] == "k8s://https://kubernetes.default.svc"
    assert conf["jobmanager.bind-host"] == "0.0.0.0"
    assert conf["taskmanager.host"] == ""  # each TaskManager advertises its pod's IP
    assert conf["kubernetes.pod-template-file.taskmanager"] == (
        f"/opt/weir/conf/{POD_TEMPLATE_FILE}"
    )
    assert conf["high-availability.cluster-id"] == "/orders"
    assert conf["security.ssl.internal.cert"] == "/opt/weir/certs/internal.pem"
    assert "security.auth.token" not in conf  # from the Secret, through the environment


def test_one_master_is_reached_through_the_headless_service() -> None:
    manifests = render_manifests(DEFAULTS)
    (config_map,) = by_kind(manifests)["ConfigMap"]
    conf = yaml.safe_load(config_map["data"][CONF_FILE])
    assert conf["jobmanager.rpc.address"] == "orders-driver.default.svc"
    driver, rest = by_kind(manifests)["Service"]
    assert driver["spec"]["clusterIP"] == "None"
    assert driver["spec"]["publishNotReadyAddresses"] is True
    assert {p["port"] for p in driver["spec"]["ports"]} == {7078, 7079, 6123}
    assert rest["spec"]["type"] == "ClusterIP"
    assert {p["port"] for p in rest["spec"]["ports"]} == {8081, 6123}
    container = master_container(manifests)
    assert container["args"] == ["master", "--set", "spark.kubernetes.driver.pod.name=$(POD_NAME)"]
    assert container["livenessProbe"]["tcpSocket"] == {"port": "rest"}
    assert container["readinessProbe"]["tcpSocket"] == {"port": "rest"}


def test_a_highly_available_pair_advertises_pod_ips_and_probes_only_readiness() -> None:
    manifests = render_manifests(HA_TLS)
    (deployment,) = by_kind(manifests)["Deployment"]
    assert deployment["spec"]["replicas"] == 2
    container = master_container(manifests)
    assert "jobmanager.rpc.address=$(POD_IP)" in container["args"]
    assert "security.auth.token=$(WEIR_AUTH_TOKEN)" in container["args"]
    token = next(e for e in container["env"] if e["name"] == "WEIR_AUTH_TOKEN")
    assert token["valueFrom"] == {"secretKeyRef": {"name": "orders-token", "key": "token"}}
    # A standby answers on no port until it leads: no liveness or startup probe.
    assert "livenessProbe" not in container
    assert "startupProbe" not in container
    assert container["readinessProbe"]["tcpSocket"] == {"port": "rest"}
    (_, rest) = by_kind(manifests)["Service"]
    assert rest["spec"]["type"] == "LoadBalancer"


def test_secrets_and_claims_are_mounted_in_the_master_and_every_taskmanager() -> None:
    manifests = render_manifests(HA_TLS)
    template = pod_template(manifests)
    pod_specs = [
        by_kind(manifests)["Deployment"][0]["spec"]["template"]["spec"],
        template["spec"],
    ]
    for spec in pod_specs:
        mounts = {m["mountPath"]: m for m in spec["containers"][0]["volumeMounts"]}
        assert mounts["/opt/weir/certs"]["readOnly"] is True
        assert "/opt/weir/storage" in mounts
        sources = {v["name"]: v for v in spec["volumes"]}
        assert sources[mounts["/opt/weir/certs"]["name"]]["secret"] == {"secretName": "orders-tls"}
        claim = sources[mounts["/opt/weir/storage"]["name"]]["persistentVolumeClaim"]
        assert claim == {"claimName": "orders-storage"}
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        assert spec["securityContext"]["runAsNonRoot"] is True


S3_CREDENTIALS = (
    "env:AWS_ACCESS_KEY_ID,secret:orders-s3,key:access-key;"
    "env:AWS_SECRET_ACCESS_KEY,secret:orders-s3,key:secret-key"
)


def test_environment_from_secrets_reaches_the_master_and_every_taskmanager() -> None:
    """kubernetes.env.secretKeyRef (S3 credentials, say): references in every pod's
    environment, the values in no ConfigMap."""
    manifests = render_manifests({**DEFAULTS, "kubernetes.env.secretKeyRef": S3_CREDENTIALS})
    validate_all(manifests)
    expected = [
        {"name": name, "valueFrom": {"secretKeyRef": {"name": "orders-s3", "key": key}}}
        for name, key in [
            ("AWS_ACCESS_KEY_ID", "access-key"),
            ("AWS_SECRET_ACCESS_KEY", "secret-key"),
        ]
    ]
    assert master_container(manifests)["env"][-2:] == expected
    assert pod_template(manifests)["spec"]["containers"][0]["env"] == expected
    assert "env" not in pod_template(render_manifests(DEFAULTS))["spec"]["containers"][0]


@pytest.mark.parametrize(
    "refs", ["env:A,secret:s", "AWS_ACCESS_KEY_ID=orders-s3", "env:A,secret:s,key:k,extra:x"]
)
def test_a_malformed_secret_reference_is_refused_naming_the_entry(refs: str) -> None:
    with pytest.raises(ConfigurationError, match=r"env:NAME,secret:SECRET,key:KEY"):
        render_manifests({**DEFAULTS, "kubernetes.env.secretKeyRef": refs})


def test_the_taskmanager_pod_template_carries_the_labels_and_no_api_token() -> None:
    template = pod_template(render_manifests(DEFAULTS))
    assert template["metadata"]["labels"] == {
        "app": "orders",
        "type": "weir-native-kubernetes",
        "component": "taskmanager",
    }
    assert template["spec"]["automountServiceAccountToken"] is False
    ports = {p["containerPort"] for p in template["spec"]["containers"][0]["ports"]}
    assert ports == {6121, 6122}


def test_the_role_is_bound_to_the_masters_service_account() -> None:
    kinds = by_kind(render_manifests({**DEFAULTS, "kubernetes.service-account": "streaming"}))
    assert "ServiceAccount" not in kinds  # the given one is used, not created
    (binding,) = kinds["RoleBinding"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "streaming", "namespace": "default"}
    ]
    assert kinds["Role"][0]["rules"] == ROLE_RULES
    spec = kinds["Deployment"][0]["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == "streaming"


def test_two_masters_without_high_availability_are_refused() -> None:
    with pytest.raises(
        ConfigurationError, match=r"high-availability\.type: kubernetes or zookeeper"
    ):
        render_manifests({**DEFAULTS, "kubernetes.jobmanager.replicas": "2"})


def test_two_masters_with_kubernetes_high_availability_need_no_zookeeper() -> None:
    """The masters elect their leader through a ConfigMap of the cluster's namespace, named
    after the cluster id; the Role lets them replace and watch it."""
    conf = {
        **DEFAULTS,
        "kubernetes.jobmanager.replicas": "2",
        "high-availability.type": "kubernetes",
        "high-availability.storageDir": "file:///opt/weir/storage/ha",
    }
    kinds = by_kind(render_manifests(conf))
    rendered = yaml.safe_load(kinds["ConfigMap"][0]["data"][CONF_FILE])
    assert rendered["high-availability.type"] == "kubernetes"
    assert rendered["kubernetes.cluster-id"] == "orders"
    assert "high-availability.zookeeper.quorum" not in rendered
    assert kinds["Deployment"][0]["spec"]["replicas"] == 2
    (configmaps,) = [r for r in kinds["Role"][0]["rules"] if r["resources"] == ["configmaps"]]
    assert {"get", "watch", "create", "update", "delete"} <= set(configmaps["verbs"])


def test_a_session_needs_a_cluster_id() -> None:
    with pytest.raises(ConfigurationError, match=r"kubernetes\.cluster-id"):
        render_manifests({})


def test_the_default_image_chart_and_project_name_one_version() -> None:
    repo = Path(__file__).resolve().parents[3]
    version = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["version"]
    assert cfg.CONTAINER_IMAGE.default == f"weir:{version}"
    chart = repo / "deploy" / "kubernetes" / "weir"
    assert yaml.safe_load((chart / "Chart.yaml").read_text())["appVersion"] == version
    assert yaml.safe_load((chart / "values.yaml").read_text())["image"]["tag"] == version


def test_flinks_jobmanager_pod_keys_set_labels_annotations_selector_and_cpu_limit() -> None:
    manifests = render_manifests(
        {
            **DEFAULTS,
            "kubernetes.jobmanager.labels": "team:payments,app:ignored",
            "kubernetes.jobmanager.annotations": "example.com/owner:payments",
            "kubernetes.jobmanager.node-selector": "disk:ssd",
            "kubernetes.jobmanager.cpu.amount": "0.5",
            "kubernetes.jobmanager.cpu.limit-factor": "3",
        }
    )
    validate_all(manifests)
    (deployment,) = by_kind(manifests)["Deployment"]
    template = deployment["spec"]["template"]
    # The cluster's own labels win: the Deployment and the Services select by them.
    assert template["metadata"]["labels"] == {
        "team": "payments",
        "app": "orders",
        "type": "weir-native-kubernetes",
        "component": "jobmanager",
    }
    assert template["metadata"]["annotations"] == {"example.com/owner": "payments"}
    assert template["spec"]["nodeSelector"] == {"disk": "ssd"}
    resources = master_container(manifests)["resources"]
    assert resources["requests"]["cpu"] == "0.5"
    assert resources["limits"]["cpu"] == "1.5"


def test_a_cpu_limit_factor_below_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"limit-factor.*1 or more"):
        render_manifests({**DEFAULTS, "kubernetes.jobmanager.cpu.limit-factor": "0.5"})


# --- application clusters (weir run-application --target kubernetes-application) ----------


def application_manifests(
    program: str = "word_count.py", args: tuple[str, ...] = ("--out", "$(HOME)/x")
) -> list[dict[str, Any]]:
    application = Application.of(program, args, lambda _path: "print('the job')\n")
    return render_manifests(DEFAULTS, application=application)


def test_an_application_clusters_manifests_pass_strict_validation() -> None:
    checked = validate_all(application_manifests())
    assert "Deployment/orders" in checked and "ConfigMap/orders-config" in checked


def test_a_shipped_program_is_in_the_configmap_and_run_by_the_master_with_its_arguments() -> None:
    manifests = application_manifests()
    (config_map,) = by_kind(manifests)["ConfigMap"]
    assert config_map["data"]["word_count.py"] == "print('the job')\n"
    args = master_container(manifests)["args"]
    # Last, after the master's own settings; $( kept from the kubelet's expansion.
    assert args[args.index("--application") :] == [
        "--application",
        "/opt/weir/conf/word_count.py",
        "--out",
        "$$(HOME)/x",
    ]
    # The session's master runs no program.
    assert "--application" not in master_container(render_manifests(DEFAULTS))["args"]


def test_a_local_program_is_the_images_own_and_not_shipped() -> None:
    manifests = application_manifests("local:///opt/app/job.py", ())
    (config_map,) = by_kind(manifests)["ConfigMap"]
    assert sorted(config_map["data"]) == sorted([CONF_FILE, POD_TEMPLATE_FILE])
    args = master_container(manifests)["args"]
    assert args[-2:] == ["--application", "/opt/app/job.py"]
    with pytest.raises(ConfigurationError, match="absolute path"):
        Application.of("local://job.py", [])


def test_an_application_master_may_delete_its_own_deployment_and_no_other() -> None:
    (role,) = by_kind(application_manifests())["Role"]
    extra = [rule for rule in role["rules"] if rule not in ROLE_RULES]
    assert extra == [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "resourceNames": ["orders"],
            "verbs": ["get", "delete"],
        }
    ]
    (session_role,) = by_kind(render_manifests(DEFAULTS))["Role"]
    assert session_role["rules"] == ROLE_RULES


def test_an_application_cluster_with_high_availability_is_refused() -> None:
    application = Application.of("local:///opt/app/job.py", [])
    with pytest.raises(ConfigurationError, match="without high availability"):
        render_manifests(HA_TLS, application=application)


@pytest.mark.parametrize("name", [CONF_FILE, "job file.py"])
def test_a_program_whose_name_cannot_be_a_configmap_key_is_refused(name: str) -> None:
    with pytest.raises(ConfigurationError, match="rename it"):
        Application.of(f"/tmp/{name}", [], lambda _path: "")


def test_a_program_too_big_for_a_configmap_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="too big to ship"):
        Application.of("big.py", [], lambda _path: "#" * (MAX_SHIPPED_PROGRAM_BYTES + 1))
