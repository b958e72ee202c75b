"""The Kubernetes objects of a Weir session cluster, as ``weir kubernetes-session`` applies
them; the Helm chart in ``deploy/kubernetes/weir`` renders the same ones.

For a cluster id ``C`` in namespace ``N``:

=====================  ==========================================================
ServiceAccount ``C``   the master pod's identity (unless kubernetes.service-account)
Role, RoleBinding      what Spark's driver does with the API: executor pods, their
``C``                  ConfigMap and PersistentVolumeClaims, and the Services it
                       deletes on stop; nothing else
ConfigMap ``C-config`` ``weir-conf.yaml`` and the TaskManager pod template
Deployment ``C``       the master: 1 pod, or 2 under ZooKeeper HA (a leader and a
                       standby); probes on the REST port
Service ``C-driver``   headless: the address executors reach the Spark driver at
                       (``spark.driver.host``), and TaskManagers the ResourceManager
Service ``C-rest``     the REST API, dashboard and Dispatcher (``weir run -m``)
PodDisruptionBudget    keeps a drain from evicting the leading master
=====================  ==========================================================

TaskManager pods are not among them: Spark's driver creates them from the pod template,
owned by the master pod, so ``kubectl delete deployment/C`` deletes them too.

The networking keys of ``weir-conf.yaml`` are the deployment's to decide and are set here
whatever the file says: every server binds all interfaces of its pod, the master is
reached through ``C-driver`` (under HA, at its own pod IP: a name two pods answer cannot
tell executors which one leads), and TaskManagers advertise their pod's IP.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.core.kubernetes_cluster import (
    BLOCK_MANAGER_PORT,
    DRIVER_PORT,
    IN_CLUSTER_MASTER,
    TASKMANAGER_DATA_PORT,
    TASKMANAGER_RPC_PORT,
    cluster_labels,
    cpus,
    master_labels,
    taskmanager_labels,
)

# Where the image keeps things (deploy/kubernetes/Dockerfile).
CONF_DIR = "/opt/weir/conf"
POD_TEMPLATE_FILE = "taskmanager-pod-template.yaml"
CONF_FILE = "weir-conf.yaml"
# The image's user: a fixed uid, so that runAsNonRoot can check it and fsGroup makes
# mounted claims writable.
RUN_AS_USER = 10001
# A master that stops accepting connections on its REST port for this long is restarted;
# the readiness probe takes it out of the Services sooner. Starting the Spark driver and
# the services takes seconds, the first image pull can take minutes: the startup probe
# allows five.
_PROBE_PERIOD_S = 10
_LIVENESS_FAILURES = 3
_STARTUP_FAILURES = 30
# A master told to stop stops its jobs, then its TaskManagers (10 s each) and their leases
# (30 s), then Spark: stop-cluster.sh gives it 90 s before SIGKILL, and so does its pod.
TERMINATION_GRACE_S = 90


# Flink's scheme for a program that is in the image already (local:///opt/.../job.py).
LOCAL_SCHEME = "local://"
# A ConfigMap holds at most 1 MiB; the configuration files share it with a shipped program.
MAX_SHIPPED_PROGRAM_BYTES = 512 * 1024
_CONFIG_MAP_KEY = re.compile(r"[-._a-zA-Z0-9]+")


@dataclass(frozen=True)
class Application:
    """The program of an application cluster (``weir run-application --target
    kubernetes-application``), which its master runs: a file of the image
    (``local:///path``), or one shipped in the cluster's ConfigMap (``source``) as
    ``name``; with its arguments."""

    path: str
    args: tuple[str, ...] = ()
    name: str = ""
    source: str = ""

    @staticmethod
    def of(program: str, args: Sequence[str], read: Any = None) -> Application:
        """``program`` as the user gave it: ``local:///path`` (in the image), else a file
        here, which is shipped (``read(program)`` gives its text). Raises
        ConfigurationError when it cannot be."""
        if program.startswith(LOCAL_SCHEME):
            path = program.removeprefix(LOCAL_SCHEME)
            if not path.startswith("/"):
                msg = f"{program!r}: a local:// program needs an absolute path in the image"
                raise ConfigurationError(msg)
            return Application(path, tuple(args))
        name = program.replace("\\", "/").rsplit("/", 1)[-1]
        if not _CONFIG_MAP_KEY.fullmatch(name) or name in (CONF_FILE, POD_TEMPLATE_FILE):
            msg = (
                f"cannot ship {program!r}: its file name must be made of letters, digits, "
                f"'-', '_' and '.' and be neither {CONF_FILE} nor {POD_TEMPLATE_FILE}; "
                "rename it, or put it in the image and give local:///path/in/the/image"
            )
            raise ConfigurationError(msg)
        source = read(program) if read is not None else ""
        if len(source.encode()) > MAX_SHIPPED_PROGRAM_BYTES:
            msg = (
                f"{program!r} is over {MAX_SHIPPED_PROGRAM_BYTES >> 10} KiB, too big to ship in "
                "the cluster's ConfigMap: put it in the image (FROM Weir's) and give "
                "local:///path/in/the/image"
            )
            raise ConfigurationError(msg)
        return Application(f"{CONF_DIR}/{name}", tuple(args), name, source)


def generated_cluster_id() -> str:
    """A cluster id for a session that was given none, as Flink makes one up."""
    return f"weir-{secrets.token_hex(4)}"


def _mounts(config: Mapping[str, str], option: cfg.ConfigOption[str]) -> dict[str, str]:
    return cfg.parse_mounts(cfg.get(config, option))


def _volume_name(prefix: str, name: str) -> str:
    return f"{prefix}-{name}"[:63].rstrip("-")


def _volumes(config: Mapping[str, str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The volumes and mounts every pod of the cluster shares: secrets and claims."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for name, path in _mounts(config, cfg.SECRETS).items():
        volume = _volume_name("secret", name)
        volumes.append({"name": volume, "secret": {"secretName": name}})
        mounts.append({"name": volume, "mountPath": path, "readOnly": True})
    for name, path in _mounts(config, cfg.PERSISTENT_VOLUME_CLAIMS).items():
        volume = _volume_name("claim", name)
        volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": name}})
        mounts.append({"name": volume, "mountPath": path})
    return volumes, mounts


def _secret_env(config: Mapping[str, str]) -> list[dict[str, Any]]:
    """The environment variables every pod takes from Secrets (kubernetes.env.secretKeyRef):
    S3 credentials, say, which then are in no ConfigMap."""
    return [
        {"name": env, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
        for env, secret, key in cfg.parse_env_secret_key_refs(
            cfg.get(config, cfg.ENV_SECRET_KEY_REF)
        )
    ]


def _pull_secrets(config: Mapping[str, str]) -> list[dict[str, str]]:
    names = cfg.get(config, cfg.CONTAINER_IMAGE_PULL_SECRETS).split(";")
    return [{"name": n.strip()} for n in names if n.strip()]


def _container_security() -> dict[str, Any]:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def _pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "fsGroup": RUN_AS_USER,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _metadata(name: str, namespace: str, cluster_id: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": cluster_labels(cluster_id)}


def session_configuration(config: Mapping[str, str], cluster_id: str) -> dict[str, str]:
    """The ``weir-conf.yaml`` of the master pod: the given entries with the networking and
    Kubernetes keys the deployment decides (see the module docstring). Raises
    ConfigurationError on a bad key or value."""
    namespace = cfg.get(config, cfg.KUBERNETES_NAMESPACE)
    entries = dict(config)
    # Used by weir kubernetes-session on the client only.
    for key in (cfg.KUBE_CONFIG_FILE.key, cfg.KUBE_CONTEXT.key):
        entries.pop(key, None)
    master = entries.get(cfg.SPARK_MASTER.key, "")
    entries.update(
        {
            cfg.SPARK_MASTER.key: master if master.startswith("k8s://") else IN_CLUSTER_MASTER,
            cfg.KUBERNETES_CLUSTER_ID.key: cluster_id,
            cfg.KUBERNETES_NAMESPACE.key: namespace,
            cfg.BIND_HOST.key: "0.0.0.0",
            cfg.REST_BIND_ADDRESS.key: "0.0.0.0",
            cfg.JOBMANAGER_ADDRESS.key: f"{cluster_id}-driver.{namespace}.svc",
            cfg.TASKMANAGER_BIND_HOST.key: "0.0.0.0",
            cfg.TASKMANAGER_HOST.key: "",
            cfg.TASKMANAGER_RPC_PORT.key: str(TASKMANAGER_RPC_PORT),
            cfg.TASKMANAGER_DATA_PORT.key: str(TASKMANAGER_DATA_PORT),
            cfg.TASKMANAGER_POD_TEMPLATE.key: f"{CONF_DIR}/{POD_TEMPLATE_FILE}",
        }
    )
    if cfg.get(entries, cfg.HA_TYPE) == "zookeeper" and not cfg.is_set(config, cfg.HA_CLUSTER_ID):
        entries[cfg.HA_CLUSTER_ID.key] = f"/{cluster_id}"
    checked = cfg.validate(entries)
    cfg.check_relations(checked)
    replicas = cfg.get(checked, cfg.JOBMANAGER_REPLICAS)
    if replicas > 1 and cfg.get(checked, cfg.HA_TYPE) == "none":
        msg = (
            f"{cfg.JOBMANAGER_REPLICAS.key}: {replicas} needs high-availability.type: "
            "kubernetes or zookeeper (a standby master takes over only through an election); "
            "set it, with high-availability.storageDir (and high-availability.zookeeper.quorum "
            "for zookeeper), or use 1"
        )
        raise ConfigurationError(msg)
    return checked


def taskmanager_pod_template(config: Mapping[str, str]) -> dict[str, Any]:
    """The Pod Spark starts every TaskManager pod from: the cluster's labels, a non-root
    user, no API token (a TaskManager never calls the API), its ports, and the shared
    volumes. Spark adds its own labels, the image, resources, its environment and the
    owner reference to the master pod."""
    cluster_id = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    volumes, mounts = _volumes(config)
    container: dict[str, Any] = {
        "name": "taskmanager",
        "ports": [
            {"name": "tm-rpc", "containerPort": TASKMANAGER_RPC_PORT},
            {"name": "tm-data", "containerPort": TASKMANAGER_DATA_PORT},
        ],
        "securityContext": _container_security(),
        "volumeMounts": mounts,
    }
    secret_env = _secret_env(config)
    if secret_env:
        container["env"] = secret_env  # Spark adds its own to the template's
    spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "securityContext": _pod_security(),
        "containers": [container],
        "volumes": volumes,
    }
    pull_secrets = _pull_secrets(config)
    if pull_secrets:
        spec["imagePullSecrets"] = pull_secrets
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": taskmanager_labels(cluster_id)},
        "spec": spec,
    }


def _rbac(
    config: Mapping[str, str], cluster_id: str, namespace: str, application: bool = False
) -> list[dict[str, Any]]:
    account = cfg.get(config, cfg.SERVICE_ACCOUNT) or cluster_id
    objects: list[dict[str, Any]] = []
    if not cfg.get(config, cfg.SERVICE_ACCOUNT):
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": _metadata(cluster_id, namespace, cluster_id),
            }
        )
    objects.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _metadata(cluster_id, namespace, cluster_id),
            "rules": ROLE_RULES + (_application_rules(cluster_id) if application else []),
        }
    )
    objects.append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _metadata(cluster_id, namespace, cluster_id),
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": cluster_id,
            },
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        }
    )
    return objects


ROLE_RULES: list[dict[str, Any]] = [
    # Spark's driver reads its own pod (the owner of executor pods), creates executor
    # pods, watches and lists them, labels lost ones inactive (patch), and deletes them
    # one by one and, on stop, all at once (deletecollection).
    {
        "apiGroups": [""],
        "resources": ["pods"],
        "verbs": ["get", "list", "watch", "create", "patch", "delete", "deletecollection"],
    },
    # The executors' Spark configuration: one ConfigMap per application. With
    # high-availability.type: kubernetes, the cluster's HA ConfigMap too: the masters'
    # lease and the recovery pointers, replaced by compare-and-swap (update) and followed
    # by clients and standbys (watch).
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "update", "delete", "deletecollection"],
    },
    # Claims made on demand for executors (spark.kubernetes.executor.volumes.*), reused
    # across executors and deleted on stop.
    {
        "apiGroups": [""],
        "resources": ["persistentvolumeclaims"],
        "verbs": ["get", "list", "create", "delete", "deletecollection"],
    },
    # On stop the driver deletes the Services of its application (it has none in client
    # mode, but asks).
    {"apiGroups": [""], "resources": ["services"], "verbs": ["deletecollection"]},
]


def _application_rules(cluster_id: str) -> list[dict[str, Any]]:
    """An application cluster's master deletes its own Deployment (and with it the whole
    cluster) once its job has ended; no other."""
    return [
        {
            "apiGroups": ["apps"],
            "resources": ["deployments"],
            "resourceNames": [cluster_id],
            "verbs": ["get", "delete"],
        }
    ]


def _master_args(config: Mapping[str, str], application: Application | None = None) -> list[str]:
    """What the master container runs: the image's ``master`` command, with what only
    the pod knows, expanded by the kubelet from its environment; in an application
    cluster, the program and its arguments last."""
    args = ["master", "--set", "spark.kubernetes.driver.pod.name=$(POD_NAME)"]
    if cfg.get(config, cfg.JOBMANAGER_REPLICAS) > 1:
        args += ["--set", f"{cfg.JOBMANAGER_ADDRESS.key}=$(POD_IP)"]
    if cfg.get(config, cfg.AUTH_TOKEN_SECRET):
        args += ["--set", f"{cfg.AUTH_TOKEN.key}=$(WEIR_AUTH_TOKEN)"]
    if application is not None:
        # The kubelet expands $(NAME) in args; $$ keeps a program argument as written.
        args += [
            "--application",
            application.path,
            *(a.replace("$(", "$$(") for a in application.args),
        ]
    return args


def _master_env(config: Mapping[str, str]) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    token = cfg.get(config, cfg.AUTH_TOKEN_SECRET)
    if token:
        name, _, key = token.partition(":")
        env.append(
            {
                "name": "WEIR_AUTH_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": name, "key": key or "token"}},
            }
        )
    return env + _secret_env(config)


def _deployment(
    config: Mapping[str, str],
    cluster_id: str,
    namespace: str,
    application: Application | None = None,
) -> dict[str, Any]:
    replicas = cfg.get(config, cfg.JOBMANAGER_REPLICAS)
    rest_port = cfg.get(config, cfg.REST_PORT)
    memory = f"{cfg.get(config, cfg.JOBMANAGER_PROCESS_SIZE) >> 20}Mi"
    cpu = cfg.get(config, cfg.JOBMANAGER_CPU)
    cpu_limit = cpus(cpu * cfg.get(config, cfg.JOBMANAGER_CPU_LIMIT_FACTOR))
    volumes, mounts = _volumes(config)
    probe = {"tcpSocket": {"port": "rest"}, "periodSeconds": _PROBE_PERIOD_S}
    container: dict[str, Any] = {
        "name": "master",
        "image": cfg.get_with_deprecated_keys(config, cfg.CONTAINER_IMAGE),
        "imagePullPolicy": cfg.get(config, cfg.CONTAINER_IMAGE_PULL_POLICY),
        "args": _master_args(config, application),
        "env": _master_env(config),
        "ports": [
            {"name": "rpc", "containerPort": cfg.get(config, cfg.JOBMANAGER_PORT)},
            {"name": "rest", "containerPort": rest_port},
            {"name": "driver", "containerPort": DRIVER_PORT},
            {"name": "blockmanager", "containerPort": BLOCK_MANAGER_PORT},
        ],
        "resources": {
            "requests": {"cpu": cpus(cpu), "memory": memory},
            "limits": {"cpu": cpu_limit, "memory": memory},
        },
        "startupProbe": {**probe, "failureThreshold": _STARTUP_FAILURES},
        "readinessProbe": probe,
        "securityContext": _container_security(),
        "volumeMounts": [{"name": "weir-conf", "mountPath": CONF_DIR, "readOnly": True}, *mounts],
    }
    if replicas > 1:
        # A standby listens on no port until it leads: a startup or liveness probe on the
        # REST port would restart it forever. Readiness alone keeps the Services on the
        # leader; a leader that stops answering loses its ZooKeeper session to the standby.
        del container["startupProbe"]
    else:
        container["livenessProbe"] = {**probe, "failureThreshold": _LIVENESS_FAILURES}
    pod_spec: dict[str, Any] = {
        "serviceAccountName": cfg.get(config, cfg.SERVICE_ACCOUNT) or cluster_id,
        "terminationGracePeriodSeconds": TERMINATION_GRACE_S,
        "securityContext": _pod_security(),
        "containers": [container],
        "volumes": [
            {"name": "weir-conf", "configMap": {"name": f"{cluster_id}-config"}},
            *volumes,
        ],
    }
    pull_secrets = _pull_secrets(config)
    if pull_secrets:
        pod_spec["imagePullSecrets"] = pull_secrets
    node_selector = cfg.parse_map(cfg.get(config, cfg.JOBMANAGER_NODE_SELECTOR))
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    # Flink's kubernetes.jobmanager.labels; the cluster's own labels (the selector) win.
    pod_metadata: dict[str, Any] = {
        "labels": {
            **cfg.parse_map(cfg.get(config, cfg.JOBMANAGER_LABELS)),
            **master_labels(cluster_id),
        }
    }
    annotations = cfg.parse_map(cfg.get(config, cfg.JOBMANAGER_ANNOTATIONS))
    if annotations:
        pod_metadata["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(cluster_id, namespace, cluster_id),
        "spec": {
            "replicas": replicas,
            # Never two leaders' worth of masters: without HA two would lease twice, and an
            # upgrade is a stop (take savepoints first) and a start.
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": master_labels(cluster_id)},
            "template": {"metadata": pod_metadata, "spec": pod_spec},
        },
    }


def _services(config: Mapping[str, str], cluster_id: str, namespace: str) -> list[dict[str, Any]]:
    rpc = {"name": "rpc", "port": cfg.get(config, cfg.JOBMANAGER_PORT), "targetPort": "rpc"}
    rest = {"name": "rest", "port": cfg.get(config, cfg.REST_PORT), "targetPort": "rest"}
    driver = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(f"{cluster_id}-driver", namespace, cluster_id),
        "spec": {
            "clusterIP": "None",
            # Executors and TaskManagers reach the master while it starts, before its
            # REST port (the readiness probe) answers.
            "publishNotReadyAddresses": True,
            "selector": master_labels(cluster_id),
            "ports": [
                {"name": "driver", "port": DRIVER_PORT, "targetPort": "driver"},
                {"name": "blockmanager", "port": BLOCK_MANAGER_PORT, "targetPort": "blockmanager"},
                rpc,
            ],
        },
    }
    exposed = cfg.get(config, cfg.REST_SERVICE_EXPOSED_TYPE)
    rest_spec: dict[str, Any] = {"selector": master_labels(cluster_id), "ports": [rest, rpc]}
    if exposed == "Headless_ClusterIP":
        rest_spec.update({"type": "ClusterIP", "clusterIP": "None"})
    else:
        rest_spec["type"] = exposed
    rest_service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(f"{cluster_id}-rest", namespace, cluster_id),
        "spec": rest_spec,
    }
    return [driver, rest_service]


def _disruption_budget(cluster_id: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _metadata(cluster_id, namespace, cluster_id),
        "spec": {
            # A drain never evicts the ready (leading) master: its jobs would stop. A
            # standby, never ready, may always go.
            "minAvailable": 1,
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
            "selector": {"matchLabels": master_labels(cluster_id)},
        },
    }


def render_manifests(
    config: Mapping[str, str],
    deployment_uid: str | None = None,
    application: Application | None = None,
) -> list[dict[str, Any]]:
    """Every object of the session cluster (of the application cluster of
    ``application``), in the order ``kubectl apply`` should create them. ``config`` must
    name its ``kubernetes.cluster-id``. With the uid of the applied Deployment, every other
    object names it as its owner, so deleting the Deployment deletes the whole cluster (as
    Flink's session does). Raises ConfigurationError."""
    cluster_id = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    if not cluster_id:
        msg = f"{cfg.KUBERNETES_CLUSTER_ID.key} is not set; give the session cluster a name"
        raise ConfigurationError(msg)
    conf = session_configuration(config, cluster_id)
    namespace = cfg.get(conf, cfg.KUBERNETES_NAMESPACE)
    if application is not None and (
        cfg.get(conf, cfg.HA_TYPE) != "none" or cfg.get(conf, cfg.JOBMANAGER_REPLICAS) > 1
    ):
        msg = (
            "an application cluster runs without high availability here (one master, "
            f"{cfg.HA_TYPE.key}: none): a restarted master would run its program again from "
            "the start. Leave high availability out, or run the job on a session "
            "(kubernetes-session.sh, then weir run --target kubernetes-session)"
        )
        raise ConfigurationError(msg)
    files: dict[str, str] = {}
    if application is not None and application.name:
        files[application.name] = application.source
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(f"{cluster_id}-config", namespace, cluster_id),
        "data": {
            **files,
            CONF_FILE: yaml.dump(conf, Dumper=_Dumper, sort_keys=True),
            POD_TEMPLATE_FILE: yaml.dump(
                taskmanager_pod_template(conf), Dumper=_Dumper, sort_keys=False
            ),
        },
    }
    owned = [
        *_rbac(conf, cluster_id, namespace, application is not None),
        config_map,
        *_services(conf, cluster_id, namespace),
        _disruption_budget(cluster_id, namespace),
    ]
    if deployment_uid is not None:
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": cluster_id}
        for obj in owned:
            obj["metadata"]["ownerReferences"] = [{**owner, "uid": deployment_uid}]
    return [*owned[:-1], _deployment(conf, cluster_id, namespace, application), owned[-1]]


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (the files of the ConfigMap) as literal blocks, and a
    value used twice twice (no anchors: kubectl reads them, people reading it less so)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def manifests_yaml(manifests: list[dict[str, Any]]) -> str:
    """One multi-document YAML stream, as ``kubectl apply -f -`` reads it."""
    return yaml.dump_all(manifests, Dumper=_Dumper, sort_keys=False)
