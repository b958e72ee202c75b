"""The Spark settings of a master whose TaskManagers are Kubernetes pods (``spark.master:
k8s://...``): which image, namespace and pod template Spark's scheduler backend creates
executor pods from, what each pod requests, and the ports the driver listens on.

A TaskManager is one lease, a one-core Spark task, so each executor pod has one core
(``spark.executor.cores: 1``) and holds one TaskManager; the pod's CPU request is the
TaskManager's (``kubernetes.taskmanager.cpu.amount``, by default its slots, as in Flink;
its limit that times ``kubernetes.taskmanager.cpu.limit-factor``), its labels, annotations
and node selector Flink's ``kubernetes.taskmanager.*`` ones, and its memory
``taskmanager.memory.process.size``, split between the executor's JVM,
which only runs the waiting lease task, and the Python worker the TaskManager lives in.

The master runs in a pod, in Spark's client mode. With ``spark.kubernetes.driver.pod.name``
(the chart sets it from the pod's own name) Spark reads the master's pod and makes it the
owner of every executor pod, so deleting the master's Deployment deletes them too.
Every value here gives way to a ``spark.*`` key set in the configuration.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from weir.core import config as cfg
from weir.core.kubernetes_cluster import BLOCK_MANAGER_PORT, DRIVER_PORT, cpus, taskmanager_labels

logger = logging.getLogger(__name__)

# The executor's JVM runs one task that waits for its TaskManager to end, and moves no
# data: a small fixed heap leaves the rest of the pod to Python.
EXECUTOR_HEAP_BYTES = 512 << 20


def is_kubernetes(config: Mapping[str, str]) -> bool:
    return cfg.get(config, cfg.SPARK_MASTER).startswith("k8s://")


def kubernetes_spark_settings(config: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.*`` settings for executor pods, from Weir's keys; ``{}`` unless
    ``spark.master`` is ``k8s://...``. Raises ConfigurationError on a bad value (a process
    size below a JVM and Python, say)."""
    if not is_kubernetes(config):
        return {}
    # At least 1 GiB (the option's check): the heap leaves Python half of it or more.
    overhead_mib = (cfg.get(config, cfg.TASKMANAGER_PROCESS_SIZE) - EXECUTOR_HEAP_BYTES) >> 20
    cpu = cfg.get(config, cfg.TASKMANAGER_CPU)
    if cpu == -1:
        cpu = float(cfg.get(config, cfg.NUM_TASK_SLOTS))
    settings = {
        "spark.kubernetes.namespace": cfg.get(config, cfg.KUBERNETES_NAMESPACE),
        "spark.kubernetes.container.image": cfg.get_with_deprecated_keys(
            config, cfg.CONTAINER_IMAGE
        ),
        "spark.kubernetes.container.image.pullPolicy": cfg.get(
            config, cfg.CONTAINER_IMAGE_PULL_POLICY
        ),
        "spark.executor.cores": "1",
        "spark.kubernetes.executor.request.cores": cpus(cpu),
        "spark.kubernetes.executor.limit.cores": cpus(
            cpu * cfg.get(config, cfg.TASKMANAGER_CPU_LIMIT_FACTOR)
        ),
        "spark.executor.memory": f"{EXECUTOR_HEAP_BYTES >> 20}m",
        "spark.executor.memoryOverhead": f"{overhead_mib}m",
        # Executors reach the driver at its advertised address (spark.driver.host: the
        # driver's headless Service, or under HA the pod's own IP). Spark 4.1 and later
        # default to telling them the address the driver binds instead, which is the pod
        # IP only in Spark's own cluster mode; a Weir master binds every interface
        # (0.0.0.0), and executors told that could never connect.
        "spark.kubernetes.executor.useDriverPodIP": "false",
        "spark.driver.port": str(DRIVER_PORT),
        "spark.driver.blockManager.port": str(BLOCK_MANAGER_PORT),
        "spark.blockManager.port": str(BLOCK_MANAGER_PORT),
        # The context would otherwise wait up to 30 s at start for 80 % of its executor
        # pods to register; leases wait for executors anyway, and the master's services
        # (a standby's takeover above all) should not.
        "spark.scheduler.minRegisteredResourcesRatio": "0",
    }
    secrets = [s.strip() for s in cfg.get(config, cfg.CONTAINER_IMAGE_PULL_SECRETS).split(";")]
    if any(secrets):
        settings["spark.kubernetes.container.image.pullSecrets"] = ",".join(s for s in secrets if s)
    template = cfg.get(config, cfg.TASKMANAGER_POD_TEMPLATE)
    if template:
        settings["spark.kubernetes.executor.podTemplateFile"] = template
    # Flink's kubernetes.taskmanager.* pod metadata; the cluster's own labels below win.
    for option, prefix in (
        (cfg.TASKMANAGER_LABELS, "spark.kubernetes.executor.label."),
        (cfg.TASKMANAGER_ANNOTATIONS, "spark.kubernetes.executor.annotation."),
        (cfg.TASKMANAGER_NODE_SELECTOR, "spark.kubernetes.executor.node.selector."),
    ):
        for name, value in cfg.parse_map(cfg.get(config, option)).items():
            settings[prefix + name] = value
    cluster_id = cfg.get(config, cfg.KUBERNETES_CLUSTER_ID)
    if cluster_id:
        settings["spark.kubernetes.executor.podNamePrefix"] = cluster_id
        for name, value in taskmanager_labels(cluster_id).items():
            settings[f"spark.kubernetes.executor.label.{name}"] = value
    taskmanagers = cfg.get(config, cfg.TASKMANAGERS_MAX) or cfg.get(config, cfg.TASKMANAGERS_MIN)
    if taskmanagers > 0:
        settings["spark.executor.instances"] = str(taskmanagers)
    if "spark.kubernetes.driver.pod.name" not in config:
        logger.warning(
            "spark.kubernetes.driver.pod.name is not set: the TaskManager pods will have no "
            "owner, and deleting the master will not delete them. The Helm chart and weir "
            "kubernetes-session set it to the master pod's name"
        )
    return settings
