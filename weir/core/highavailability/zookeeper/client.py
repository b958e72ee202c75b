"""The ZooKeeper client of a Weir process: a kazoo client built from Flink's
``high-availability.zookeeper.*`` keys, rooted (chroot) at
``{path.root}/{cluster-id}``, and the layout of the nodes beneath it::

    /leader/latch/                      the masters' election (ephemeral sequential)
    /leader/{component}/connection_info address and fencing token of a leader (ephemeral)
    /jobgraphs/{job id}                 pointer to the job graph in storageDir
    /checkpoint_id_counter/{job id}     the next checkpoint id (compare-and-set)
    /checkpoints/{job id}               pointers to the retained completed checkpoints

kazoo is one of Weir's dependencies, imported only here and in the modules beside it, when
``high-availability.type`` is ``zookeeper``; an environment without it gets a one-line
error naming the setting and the package (``weir.core.optional_dependency``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.core.optional_dependency import require

logger = logging.getLogger(__name__)

# What to install when kazoo is missing: the version pyproject.toml pins.
KAZOO_REQUIREMENT = "kazoo==2.11.0"

LATCH_PATH = "/leader/latch"
DISPATCHER = "dispatcher"
RESOURCE_MANAGER = "resource_manager"


def connection_info_path(component: str) -> str:
    return f"/leader/{component}/connection_info"


def job_graph_path(job_id: str) -> str:
    return f"/jobgraphs/{job_id}"


def checkpoint_counter_path(job_id: str) -> str:
    return f"/checkpoint_id_counter/{job_id}"


def checkpoints_path(job_id: str) -> str:
    return f"/checkpoints/{job_id}"


def chroot(config: Mapping[str, str]) -> str:
    """``{path.root}/{cluster-id}``, normalised to one leading slash and none trailing."""
    root = cfg.get(config, cfg.HA_ZK_PATH_ROOT).strip("/")
    cluster = cfg.get(config, cfg.HA_CLUSTER_ID).strip("/")
    return "/" + "/".join(part for part in (root, cluster) if part)


def create_client(config: Mapping[str, str]) -> Any:
    """A started kazoo client (``KazooClient``) for the configured quorum; raises
    ConfigurationError when no quorum is configured or none of its members answers within
    the connection timeout."""
    needed_for = f"{cfg.HA_TYPE.key}: zookeeper"
    kazoo_client = require("kazoo.client", needed_for=needed_for, requirement=KAZOO_REQUIREMENT)
    kazoo_threading = require(
        "kazoo.handlers.threading", needed_for=needed_for, requirement=KAZOO_REQUIREMENT
    )
    quorum = cfg.get(config, cfg.HA_ZK_QUORUM).strip()
    if not quorum:
        msg = (
            f"{cfg.HA_TYPE.key} is zookeeper but {cfg.HA_ZK_QUORUM.key} is empty; set it to "
            "the ZooKeeper servers, e.g. 'zk1:2181,zk2:2181,zk3:2181'"
        )
        raise ConfigurationError(msg)
    session_ms = cfg.get(config, cfg.HA_ZK_SESSION_TIMEOUT)
    connection_ms = cfg.get(config, cfg.HA_ZK_CONNECTION_TIMEOUT)
    retry = {
        "max_tries": cfg.get(config, cfg.HA_ZK_MAX_RETRY_ATTEMPTS),
        "delay": cfg.get(config, cfg.HA_ZK_RETRY_WAIT) / 1000,
        "backoff": 1,
        "max_delay": cfg.get(config, cfg.HA_ZK_RETRY_WAIT) / 1000,
        "ignore_expire": False,
    }
    client = kazoo_client.KazooClient(
        hosts=quorum,
        timeout=session_ms / 1000,
        # Reconnecting is retried for ever: a master waits for its quorum to come back.
        connection_retry={**retry, "max_tries": -1},
        command_retry=retry,
    )
    try:
        client.start(timeout=connection_ms / 1000)
    except kazoo_threading.KazooTimeoutError as exc:
        client.close()
        msg = (
            f"no ZooKeeper server of {quorum!r} answered within {connection_ms} ms "
            f"({cfg.HA_ZK_CONNECTION_TIMEOUT.key}); check {cfg.HA_ZK_QUORUM.key} and that "
            "the servers run"
        )
        raise ConfigurationError(msg) from exc
    # Every path below is relative to the cluster's node, which must exist first: create it,
    # then root the client there (kazoo prefixes its chroot to every path it sends).
    root = chroot(config)
    client.ensure_path(root)
    client.chroot = root
    return client


def close_client(client: Any) -> None:
    try:
        client.stop()
    finally:
        client.close()
