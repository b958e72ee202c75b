"""What every pod of a Kubernetes session cluster agrees on: the labels that mark them and
the ports they listen on.

The labels are those Flink's native Kubernetes session puts on its own (``app``,
``type``, ``component``): the master's Deployment and Services select its pods by them,
and Spark puts them on every TaskManager pod, so ``kubectl get pods -l app=<cluster-id>``
lists a whole cluster. The Helm chart (``deploy/kubernetes/weir``) writes the same labels
and ports in its templates; ``tests/integration/kubernetes`` checks that both agree."""

from __future__ import annotations

# Where the Spark driver reaches the Kubernetes API from inside a pod.
IN_CLUSTER_MASTER = "k8s://https://kubernetes.default.svc"
# Fixed ports, so that the driver's headless Service and a NetworkPolicy can name them:
# Spark's own conventions on Kubernetes for the driver (7078, 7079), Flink's for the
# TaskManagers (each TaskManager pod has an address of its own).
DRIVER_PORT = 7078
BLOCK_MANAGER_PORT = 7079
TASKMANAGER_RPC_PORT = 6122
TASKMANAGER_DATA_PORT = 6121

LABEL_APP = "app"
LABEL_TYPE = "type"
LABEL_COMPONENT = "component"
TYPE_NATIVE = "weir-native-kubernetes"
COMPONENT_MASTER = "jobmanager"
COMPONENT_TASKMANAGER = "taskmanager"


def cluster_labels(cluster_id: str) -> dict[str, str]:
    """The labels every object of the cluster carries."""
    return {LABEL_APP: cluster_id, LABEL_TYPE: TYPE_NATIVE}


def master_labels(cluster_id: str) -> dict[str, str]:
    """The labels of the master pods; the Services select them."""
    return {**cluster_labels(cluster_id), LABEL_COMPONENT: COMPONENT_MASTER}


def taskmanager_labels(cluster_id: str) -> dict[str, str]:
    """The labels of the TaskManager pods (Spark adds its own: spark-app-selector,
    spark-role, spark-exec-id)."""
    return {**cluster_labels(cluster_id), LABEL_COMPONENT: COMPONENT_TASKMANAGER}


def cpus(amount: float) -> str:
    """A number of CPUs as Kubernetes quantities are written: ``1``, ``0.5``."""
    return str(int(amount)) if amount == int(amount) else str(amount)
