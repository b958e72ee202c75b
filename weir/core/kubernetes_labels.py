"""The labels that mark the pods of a Kubernetes session cluster, as Flink's native
Kubernetes session marks its own (``app``, ``type``, ``component``): the master's
Deployment and Services select its pods by them, and Spark puts them on every TaskManager
pod, so ``kubectl get pods -l app=<cluster-id>`` lists a whole cluster.

The Helm chart (``deploy/kubernetes/weir``) writes the same labels in its templates;
``tests/integration/kubernetes`` checks that both render them alike."""

from __future__ import annotations

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
