"""Kubernetes deployment keys (Flink's KubernetesConfigOptions where Flink has the key) and
the process sizes of the master and the TaskManagers (Flink's memory keys)."""

from __future__ import annotations

import re

from weir.core.config_option import _option, _parse_bool, parse_memory_bytes
from weir.core.options.job import parse_map

# Flink's rule for kubernetes.cluster-id: it names the Deployment, the Services and, as
# Spark's executor pod name prefix, every TaskManager pod, so it must be a DNS label with
# room for the suffixes ("-rest", "-exec-12"). Spark refuses executor pod name prefixes
# longer than 47 characters; Flink stops at 45.
_CLUSTER_ID = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
CLUSTER_ID_MAX_LENGTH = 45


def _cluster_id(text: str) -> str:
    value = text.strip()
    if value and (len(value) > CLUSTER_ID_MAX_LENGTH or not _CLUSTER_ID.fullmatch(value)):
        msg = (
            f"expected at most {CLUSTER_ID_MAX_LENGTH} lowercase letters, digits and '-', "
            f"starting with a letter and ending with a letter or digit, got {text!r}"
        )
        raise ValueError(msg)
    return value


def _cpu_amount(text: str) -> float:
    value = float(text)
    if not (value > 0 or value == -1):  # NaN too
        msg = f"expected a number of CPUs above 0 (or -1 for the default), got {text!r}"
        raise ValueError(msg)
    return value


# A pod holds a JVM (Spark's driver or executor) and Python: below this neither starts.
_MIN_PROCESS_SIZE = 1 << 30


def _process_size(text: str) -> int:
    value = parse_memory_bytes(text)
    if value < _MIN_PROCESS_SIZE:
        msg = f"expected at least 1 gb (a JVM and a Python process), got {text!r}"
        raise ValueError(msg)
    return value


def _limit_factor(text: str) -> float:
    value = float(text)
    if not value >= 1:  # NaN too
        msg = f"expected a factor of 1 or more (the limit is the request times it), got {text!r}"
        raise ValueError(msg)
    return value


def _map(text: str) -> str:
    parse_map(text)
    return text


def _replicas(text: str) -> int:
    value = int(text)
    if value not in (1, 2):
        msg = f"expected 1, or 2 (a leader and a standby, with high availability), got {text!r}"
        raise ValueError(msg)
    return value


# Kubernetes' own spellings, matched case-insensitively as Flink's enum options are.
_PULL_POLICIES = {"always": "Always", "never": "Never", "ifnotpresent": "IfNotPresent"}
_NODE_ADDRESS_TYPES = {"internalip": "InternalIP", "externalip": "ExternalIP"}
_SERVICE_TYPES = {
    "clusterip": "ClusterIP",
    "nodeport": "NodePort",
    "loadbalancer": "LoadBalancer",
    "headless_clusterip": "Headless_ClusterIP",
}


def _pull_policy(text: str) -> str:
    return _PULL_POLICIES[text.strip().lower()]


def _service_type(text: str) -> str:
    return _SERVICE_TYPES[text.strip().lower()]


def _node_address_type(text: str) -> str:
    return _NODE_ADDRESS_TYPES[text.strip().lower()]


KUBERNETES_CLUSTER_ID = _option(
    "kubernetes.cluster-id",
    "",
    _cluster_id,
    "Names a Kubernetes session cluster: its Deployment, Services, ConfigMap and the prefix "
    "of its TaskManager pods (at most 45 characters of [a-z0-9-], starting with a letter). "
    "weir kubernetes-session makes one up when unset.",
)
KUBERNETES_NAMESPACE = _option(
    "kubernetes.namespace",
    "default",
    str,
    "The namespace of the master's Deployment and of the TaskManager pods Spark creates.",
)
CONTAINER_IMAGE = _option(
    "kubernetes.container.image.ref",
    "weir:0.1.0",
    str,
    "The image of the master and the TaskManager pods (deploy/kubernetes/Dockerfile builds "
    "one); old name kubernetes.container.image.",
)
CONTAINER_IMAGE_DEPRECATED = _option(
    "kubernetes.container.image", "", str, "Old name of kubernetes.container.image.ref."
)
CONTAINER_IMAGE_PULL_POLICY = _option(
    "kubernetes.container.image.pull-policy",
    "IfNotPresent",
    _pull_policy,
    "When the kubelet pulls the image.",
    tuple(_PULL_POLICIES),
)
CONTAINER_IMAGE_PULL_SECRETS = _option(
    "kubernetes.container.image.pull-secrets",
    "",
    str,
    "Semicolon-separated names of the Secrets used to pull the image from a private registry.",
)
SERVICE_ACCOUNT = _option(
    "kubernetes.service-account",
    "",
    str,
    "The service account of the master pod, whose Role lets Spark's driver create and "
    "delete TaskManager pods. Unset: the one weir kubernetes-session creates, named after "
    "kubernetes.cluster-id.",
)
REST_SERVICE_EXPOSED_TYPE = _option(
    "kubernetes.rest-service.exposed.type",
    "ClusterIP",
    _service_type,
    "How the Service of the REST API, the dashboard and the Dispatcher is exposed.",
    tuple(_SERVICE_TYPES),
)
NODE_PORT_ADDRESS_TYPE = _option(
    "kubernetes.rest-service.exposed.node-port-address-type",
    "InternalIP",
    _node_address_type,
    "Which address of a node a client outside the cluster reaches a NodePort REST Service "
    "at (weir ... --target kubernetes-session).",
    tuple(_NODE_ADDRESS_TYPES),
)
ATTACHED = _option(
    "execution.attached",
    False,
    _parse_bool,
    "Whether weir kubernetes-session stays attached to the session it starts or finds: it "
    "then reads `stop` (delete the session), `quit` (leave it running) and `help`.",
)
JOBMANAGER_REPLICAS = _option(
    "kubernetes.jobmanager.replicas",
    1,
    _replicas,
    "Master pods: 1, or 2 with high-availability.type zookeeper or kubernetes (a leader and "
    "a standby).",
)
JOBMANAGER_CPU = _option(
    "kubernetes.jobmanager.cpu.amount",
    1.0,
    _cpu_amount,
    "CPUs the master pod requests (and is limited to).",
)
TASKMANAGER_CPU = _option(
    "kubernetes.taskmanager.cpu.amount",
    -1.0,
    _cpu_amount,
    "CPUs a TaskManager pod requests (and is limited to); -1: taskmanager.numberOfTaskSlots.",
)
JOBMANAGER_CPU_LIMIT_FACTOR = _option(
    "kubernetes.jobmanager.cpu.limit-factor",
    1.0,
    _limit_factor,
    "The master pod's CPU limit as a multiple of its request (1: limit = request).",
)
TASKMANAGER_CPU_LIMIT_FACTOR = _option(
    "kubernetes.taskmanager.cpu.limit-factor",
    1.0,
    _limit_factor,
    "A TaskManager pod's CPU limit as a multiple of its request (1: limit = request).",
)
JOBMANAGER_LABELS = _option(
    "kubernetes.jobmanager.labels",
    "",
    _map,
    "Labels of the master pods, as key1:value1,key2:value2.",
)
TASKMANAGER_LABELS = _option(
    "kubernetes.taskmanager.labels",
    "",
    _map,
    "Labels of the TaskManager pods, as key1:value1,key2:value2.",
)
JOBMANAGER_ANNOTATIONS = _option(
    "kubernetes.jobmanager.annotations",
    "",
    _map,
    "Annotations of the master pods, as key1:value1,key2:value2.",
)
TASKMANAGER_ANNOTATIONS = _option(
    "kubernetes.taskmanager.annotations",
    "",
    _map,
    "Annotations of the TaskManager pods, as key1:value1,key2:value2.",
)
JOBMANAGER_NODE_SELECTOR = _option(
    "kubernetes.jobmanager.node-selector",
    "",
    _map,
    "The node selector of the master pods, as key1:value1,key2:value2.",
)
TASKMANAGER_NODE_SELECTOR = _option(
    "kubernetes.taskmanager.node-selector",
    "",
    _map,
    "The node selector of the TaskManager pods, as key1:value1,key2:value2.",
)
TASKMANAGER_POD_TEMPLATE = _option(
    "kubernetes.pod-template-file.taskmanager",
    "",
    str,
    "A Pod manifest Spark starts every TaskManager pod from "
    "(spark.kubernetes.executor.podTemplateFile): volumes, labels, security context.",
)
KUBE_CONFIG_FILE = _option(
    "kubernetes.config.file",
    "",
    str,
    "The kubeconfig weir kubernetes-session gives kubectl (default: kubectl's own).",
)
KUBE_CONTEXT = _option(
    "kubernetes.context",
    "",
    str,
    "The kubeconfig context weir kubernetes-session gives kubectl (default: the current one).",
)
JOBMANAGER_PROCESS_SIZE = _option(
    "jobmanager.memory.process.size",
    2 << 30,
    _process_size,
    "Memory of the master pod (request and limit): the Spark driver's JVM and Python.",
)
TASKMANAGER_PROCESS_SIZE = _option(
    "taskmanager.memory.process.size",
    2 << 30,
    _process_size,
    "Memory of a TaskManager pod on Kubernetes (request and limit): Spark's executor JVM "
    "and the Python worker the TaskManager runs in.",
)


def parse_mounts(text: str) -> dict[str, str]:
    """``name:/path,name:/path`` (Flink's form for kubernetes.secrets) as a dict; raises
    ValueError naming the entry that is not of that form."""
    mounts: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in text.split(","))):
        name, sep, path = entry.partition(":")
        if not sep or not name.strip() or not path.strip().startswith("/"):
            msg = f"expected name:/absolute/path, got {entry!r}"
            raise ValueError(msg)
        mounts[name.strip()] = path.strip()
    return mounts


def _mounts(text: str) -> str:
    parse_mounts(text)
    return text


SECRETS = _option(
    "kubernetes.secrets",
    "",
    _mounts,
    "Secrets mounted read-only into the master and every TaskManager pod, as "
    "name:/path,... (the TLS files of security.ssl.*, say).",
)
PERSISTENT_VOLUME_CLAIMS = _option(
    "kubernetes.persistent-volume-claims",
    "",
    _mounts,
    "PersistentVolumeClaims mounted into the master and every TaskManager pod, as "
    "claim:/path,...: checkpoints, savepoints and HA storage as file:// URLs under the same "
    "path in every pod (the claim must be ReadWriteMany).",
)
AUTH_TOKEN_SECRET = _option(
    "kubernetes.auth-token.secret",
    "",
    str,
    "A Secret holding security.auth.token, as name or name:key (key: token): the master "
    "reads it from its environment, so the token is in no ConfigMap.",
)


def parse_env_secret_key_refs(text: str) -> list[tuple[str, str, str]]:
    """``env:NAME,secret:SECRET,key:KEY;...`` (Flink's form for
    kubernetes.env.secretKeyRef) as (variable, Secret, key) triples; raises ValueError
    naming the entry that is not of that form."""
    refs: list[tuple[str, str, str]] = []
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        fields: dict[str, str] = {}
        for part in entry.split(","):
            name, sep, value = part.partition(":")
            if sep and name.strip() in ("env", "secret", "key") and value.strip():
                fields[name.strip()] = value.strip()
        if len(fields) != 3 or entry.count(",") != 2:
            msg = f"expected env:NAME,secret:SECRET,key:KEY, got {entry!r}"
            raise ValueError(msg)
        refs.append((fields["env"], fields["secret"], fields["key"]))
    return refs


def _env_secret_key_refs(text: str) -> str:
    parse_env_secret_key_refs(text)
    return text


ENV_SECRET_KEY_REF = _option(
    "kubernetes.env.secretKeyRef",
    "",
    _env_secret_key_refs,
    "Environment variables of the master and every TaskManager pod taken from Secrets, as "
    "env:NAME,secret:SECRET,key:KEY;... (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for "
    "s3://, say): the values are in no ConfigMap.",
)
