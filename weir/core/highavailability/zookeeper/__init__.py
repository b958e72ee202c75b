"""ZooKeeper high availability (``high-availability.type: zookeeper``), on kazoo."""

from weir.core.highavailability.zookeeper.leader_latch import ZooKeeperLeaderLatch
from weir.core.highavailability.zookeeper.services import ZooKeeperHaServices, create_ha_services

__all__ = ["ZooKeeperHaServices", "ZooKeeperLeaderLatch", "create_ha_services"]
