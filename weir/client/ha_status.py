"""``weir ha status``: what ZooKeeper, or the cluster's Kubernetes ConfigMap, holds for a
highly available cluster: the leaders with their addresses and fencing tokens, the stored
job graphs, and the latest completed checkpoint of each job. Reads only; works while no
master runs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.core.highavailability.kubernetes.leader_election import published_leader
from weir.core.highavailability.kubernetes.leader_elector import (
    LEADER_ANNOTATION,
    LEADER_KEY_PREFIX,
    LeaderRecord,
)
from weir.core.highavailability.kubernetes.services import config_map_ref, create_api_client
from weir.core.highavailability.kubernetes.stores import CHECKPOINTS_PREFIX, JOB_GRAPH_PREFIX
from weir.core.highavailability.zookeeper.client import (
    LATCH_PATH,
    checkpoints_path,
    chroot,
    close_client,
    create_client,
)
from weir.core.highavailability.zookeeper.leader_election import decode_leader


@dataclass(frozen=True, slots=True)
class HaStatus:
    cluster: str
    leaders: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Component -> (address, fencing token) of the leaders that published one."""
    contenders: list[str] = field(default_factory=list)
    """The masters in the election, the leader first."""
    job_graphs: dict[str, str] = field(default_factory=dict)
    """Job id -> where its graph is stored."""
    latest_checkpoints: dict[str, str] = field(default_factory=dict)
    """Job id -> 'chk N at URL' of its latest completed checkpoint."""


def read_ha_status(config: Mapping[str, str]) -> HaStatus:
    kind = cfg.get(config, cfg.HA_TYPE)
    if kind == "kubernetes":
        return _read_kubernetes(config)
    if kind != "zookeeper":
        msg = (
            f"{cfg.HA_TYPE.key} is not zookeeper or kubernetes in this configuration; `weir ha "
            "status` reads a highly available cluster's ZooKeeper or ConfigMap (set "
            "WEIR_CONF_DIR to its conf)"
        )
        raise ConfigurationError(msg)
    client = create_client(config)
    try:
        return _read(client, chroot(config))
    finally:
        close_client(client)


def _children(client: Any, path: str) -> list[str]:
    return sorted(client.get_children(path)) if client.exists(path) else []


def _read(client: Any, cluster: str) -> HaStatus:
    status = HaStatus(cluster)
    for component in _children(client, "/leader"):
        info = f"/leader/{component}/connection_info"
        if client.exists(info):
            address, token = decode_leader(client.get(info)[0])
            if address is not None and token is not None:
                status.leaders[component] = (address, token)
    contenders = _children(client, LATCH_PATH)
    by_sequence = sorted(contenders, key=lambda name: name[-10:])
    for name in by_sequence:
        data = client.get(f"{LATCH_PATH}/{name}")[0]
        status.contenders.append(data.decode(errors="replace") or name)
    for job_id in _children(client, "/jobgraphs"):
        status.job_graphs[job_id] = json.loads(client.get(f"/jobgraphs/{job_id}")[0])["path"]
    for job_id in _children(client, "/checkpoints"):
        pointers = json.loads(client.get(checkpoints_path(job_id))[0] or b"[]")
        if pointers:
            latest = pointers[-1]
            status.latest_checkpoints[job_id] = (
                f"checkpoint {latest['checkpoint_id']} at {latest['external_pointer']}"
            )
    return status


def _read_kubernetes(config: Mapping[str, str]) -> HaStatus:
    ref = config_map_ref(config)
    client = create_api_client(config)
    try:
        config_map = client.get_config_map(ref.namespace, ref.name)
    finally:
        client.close()
    status = HaStatus(f"{ref.namespace}/{ref.name} (Kubernetes ConfigMap)")
    if config_map is None:
        return status
    record = LeaderRecord.decode(config_map.annotations.get(LEADER_ANNOTATION))
    if record is not None and record.holder_identity:
        status.contenders.append(
            f"session {record.holder_identity[:8]} (lease renewed {record.renew_time})"
        )
    for key in sorted(config_map.data):
        if key.startswith(LEADER_KEY_PREFIX):
            component = key[len(LEADER_KEY_PREFIX) :]
            address, token = published_leader(config_map, component)
            if address is not None and token is not None:
                status.leaders[component] = (address, token)
        elif key.startswith(JOB_GRAPH_PREFIX):
            path = json.loads(config_map.data[key])["path"]
            status.job_graphs[key[len(JOB_GRAPH_PREFIX) :]] = path
        elif key.startswith(CHECKPOINTS_PREFIX):
            pointers = json.loads(config_map.data[key]).get("checkpoints", [])
            if pointers:
                latest = pointers[-1]
                status.latest_checkpoints[key[len(CHECKPOINTS_PREFIX) :]] = (
                    f"checkpoint {latest['checkpoint_id']} at {latest['external_pointer']}"
                )
    return status


def format_ha_status(status: HaStatus) -> str:
    lines = [f"cluster {status.cluster}"]
    lines.append("masters in the election (the leader first):")
    lines += [f"  {name}" for name in status.contenders] or ["  none"]
    lines.append("leaders:")
    lines += [
        f"  {component}: {address} (session {token[:8]})"
        for component, (address, token) in status.leaders.items()
    ] or ["  none"]
    lines.append("jobs:")
    job_ids = sorted(status.job_graphs.keys() | status.latest_checkpoints.keys())
    for job_id in job_ids:
        graph = status.job_graphs.get(job_id, "no stored graph (ended)")
        checkpoint = status.latest_checkpoints.get(job_id, "no completed checkpoint")
        lines.append(f"  {job_id}: graph {graph}; latest {checkpoint}")
    if not job_ids:
        lines.append("  none")
    return "\n".join(lines)
