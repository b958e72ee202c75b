"""The master of a YARN session, as Flink's YarnSessionClusterEntrypoint: the main of the
session's Spark application, which Spark runs in the ApplicationMaster's container
(``spark-submit --master yarn --deploy-mode cluster``; ``weir.client.yarn_session``
submits it). Dispatcher, ResourceManager, JobMasters and the Spark driver live there; the
TaskManagers are the application's executors.

    python yarn_entrypoint.py [weir-conf.yaml]

It reads the configuration the client shipped (``weir-conf.yaml`` in the container's
working directory, where YARN put it), binds to the container's host (``NM_HOST``: the
node's address on a cluster, loopback on a one-machine one) on
``yarn.application-master.port`` with the REST endpoint on any free port, and runs as
``master_process`` does. Its ready line goes to stdout, which YARN keeps as the
container's ``stdout`` log: that is where the client finds the Dispatcher without high
availability (with it, ZooKeeper holds the address)::

    Weir master ready: Dispatcher at node7.example.com:40123

A stop through the Dispatcher (``ShutDownCluster``) or SIGTERM ends the process with 0,
and Spark's ApplicationMaster then ends the application FINISHED (SUCCEEDED).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from weir.client.master_process import CONF_FILE, ShutdownSignals, run
from weir.client.yarn_cluster_descriptor import cluster_id_of
from weir.core import config as cfg
from weir.core.errors import ConfigurationError

logger = logging.getLogger(__name__)

# container_[e<epoch>_]<cluster timestamp>_<application>_<attempt>_<container>
_CONTAINER_ID = re.compile(r"container_(?:e\d+_)?(\d+)_(\d+)_\d+_\d+")


def application_id_of(container_id: str) -> str:
    """The application a YARN container belongs to."""
    found = _CONTAINER_ID.fullmatch(container_id)
    if found is None:
        msg = f"{container_id!r} is no YARN container id (CONTAINER_ID)"
        raise ConfigurationError(msg)
    return f"application_{found.group(1)}_{found.group(2)}"


def master_config(entries: Mapping[str, str], environment: Mapping[str, str]) -> dict[str, str]:
    """The shipped configuration with the master's addresses set for its container."""
    host = environment.get("NM_HOST") or socket.gethostname()
    try:
        bind = socket.gethostbyname(host)
    except OSError as exc:
        msg = f"the ApplicationMaster's host {host!r} does not resolve ({exc})"
        raise ConfigurationError(msg) from exc
    config = dict(entries)
    config[cfg.SPARK_MASTER.key] = "yarn"
    config[cfg.BIND_HOST.key] = bind
    config[cfg.JOBMANAGER_ADDRESS.key] = host
    config[cfg.JOBMANAGER_PORT.key] = str(cfg.get(entries, cfg.YARN_APPLICATION_MASTER_PORT))
    # Several sessions may share a node: the REST endpoint takes any free port, and the
    # session's client prints where it is.
    config[cfg.REST_PORT.key] = "0"
    config.pop(cfg.REST_BIND_ADDRESS.key, None)
    config.pop(cfg.REST_ADDRESS.key, None)
    ha = cfg.get(entries, cfg.HA_TYPE) == "zookeeper"
    if ha and cfg.HA_CLUSTER_ID.key not in entries:
        # Every attempt of the application finds its jobs under the same id, and no other
        # session under it (Flink's default on YARN; the client computes the same).
        application = application_id_of(environment.get("CONTAINER_ID", ""))
        config[cfg.HA_CLUSTER_ID.key] = cluster_id_of(application)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[0] if args else CONF_FILE)
    try:
        config = master_config(cfg.load_config_file(path), os.environ)
        cfg.check_relations(config)
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    logger.info(
        "YARN session master in container %s on %s",
        os.environ.get("CONTAINER_ID", "?"),
        config[cfg.JOBMANAGER_ADDRESS.key],
    )
    signals = ShutdownSignals()
    signals.install()
    return run(config, signals, application_master=True)


if __name__ == "__main__":
    sys.exit(main())
