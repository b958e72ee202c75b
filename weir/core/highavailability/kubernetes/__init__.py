"""Kubernetes high availability (``high-availability.type: kubernetes``): leader election
and recovery pointers in a ConfigMap, no ZooKeeper."""

from weir.core.highavailability.kubernetes.leader_elector import KubernetesLeaderElector
from weir.core.highavailability.kubernetes.services import KubernetesHaServices

__all__ = ["KubernetesHaServices", "KubernetesLeaderElector"]
