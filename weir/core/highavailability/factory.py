"""The HA services of a master process, as ``high-availability.type`` names them."""

from __future__ import annotations

from collections.abc import Mapping

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.core.highavailability.kubernetes import KubernetesHaServices
from weir.core.highavailability.kubernetes.services import config_map_ref
from weir.core.highavailability.zookeeper import ZooKeeperHaServices

LeaderElectedHaServices = ZooKeeperHaServices | KubernetesHaServices
"""HA services with an election among masters: ``start_contending()``, and ``latch``
(``await_leadership``, ``await_revocation``, ``stop``, ``token``)."""


def create_ha_services(config: Mapping[str, str], identifier: str = "") -> LeaderElectedHaServices:
    """ZooKeeper or Kubernetes HA services (ConfigurationError when they cannot reach their
    store, or for ``none``)."""
    kind = cfg.get(config, cfg.HA_TYPE)
    if kind == "zookeeper":
        return ZooKeeperHaServices(config, identifier)
    if kind == "kubernetes":
        return KubernetesHaServices(config, identifier)
    msg = f"{cfg.HA_TYPE.key} is {kind!r}: there is no leader election to take part in"
    raise ConfigurationError(msg)


def election_store(config: Mapping[str, str]) -> str:
    """Where the masters' election happens, for the standby's line."""
    if cfg.get(config, cfg.HA_TYPE) == "kubernetes":
        ref = config_map_ref(config)
        return f"Kubernetes ConfigMap {ref.namespace}/{ref.name}"
    return f"ZooKeeper {cfg.get(config, cfg.HA_ZK_QUORUM)}"
