"""The master process of a standalone cluster: ResourceManager (the Spark driver),
Dispatcher and the JobMasters it starts, as Flink's JobManager process hosts them.
A composition root; ``deploy/bin/start-cluster.sh`` runs it in the background.

    python -m weir.client.master_process --config-dir DIR [--host H] [--port P]
                                         [--set key=value ...]

It reads ``DIR/weir-conf.yaml``; ``--host`` and ``--port`` override
``jobmanager.bind-host`` and ``jobmanager.rpc.port``, ``--set`` any key (CLI flags win
over the file). A bad key or value is reported by name and the process exits with 1.
Logs go to stderr; once the Dispatcher answers, one line goes to stdout::

    Weir master ready: Dispatcher at 127.0.0.1:6123

With ``--application PROGRAM [ARG ...]`` (last) it is the master of an application
cluster (``weir run-application``): once its services are up it runs the program against
its own Dispatcher, and when its jobs have ended, none failed, it ends the cluster
(``weir.client.kubernetes_application``).

SIGTERM or SIGINT stops it gracefully (Dispatcher and JobMasters, the server, then the
ResourceManager with its TaskManagers and the SparkContext) and it exits with 0; so does a
client's ShutDownCluster call to its Dispatcher (``weir yarn-session --stop``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from weir.client.cluster_components import ClusterComponents
from weir.core import config as cfg
from weir.core.errors import ConfigurationError, WeirError

logger = logging.getLogger(__name__)

CONF_FILE = "weir-conf.yaml"
READY_LINE = "Weir master ready: Dispatcher at {address}"
# Printed after the ready line when the master serves the REST API and the dashboard.
REST_LINE = "Weir master REST API at {url}"


def _parse_setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        msg = f"expected key=value, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return key.strip(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m weir.client.master_process",
        description="Run a Weir master: Dispatcher, ResourceManager and JobMasters.",
    )
    parser.add_argument(
        "--config-dir", required=True, type=Path, help=f"directory holding {CONF_FILE}"
    )
    parser.add_argument("--host", help="interface to bind (overrides jobmanager.bind-host)")
    parser.add_argument(
        "--port", type=int, help="Dispatcher port (overrides jobmanager.rpc.port; 0 = any free)"
    )
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        type=_parse_setting,
        metavar="KEY=VALUE",
        help="override a configuration key (repeatable)",
    )
    parser.add_argument(
        "--application",
        nargs=argparse.REMAINDER,
        metavar="PROGRAM [ARG ...]",
        help="run this program (and arguments) in the cluster, and end it with its jobs",
    )
    return parser


def load_master_config(ns: argparse.Namespace) -> dict[str, str]:
    """The file's entries with the command line's overrides; raises ConfigurationError."""
    path = ns.config_dir / CONF_FILE
    if not path.is_file():
        msg = f"no configuration file {str(path)!r}; give --config-dir the directory holding it"
        raise ConfigurationError(msg)
    entries: dict[str, str] = cfg.load_config_file(path)
    overrides = dict(ns.settings)
    if ns.host is not None:
        overrides[cfg.BIND_HOST.key] = ns.host
    if ns.port is not None:
        overrides[cfg.JOBMANAGER_PORT.key] = str(ns.port)
    entries.update(cfg.validate(overrides))
    cfg.check_relations(entries)
    return entries


class ShutdownSignals:
    """Turns SIGTERM and SIGINT into an event the main thread waits on."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.requested.is_set():
            # Already stopping; a stuck stop is ended by the scripts' SIGKILL, not here.
            logger.warning(
                "%s received while stopping; still stopping", signal.Signals(signum).name
            )
            return
        logger.info("%s received: stopping the master", signal.Signals(signum).name)
        self.requested.set()


def run(
    config: dict[str, str],
    signals: ShutdownSignals,
    *,
    application_master: bool = False,
    application: Sequence[str] | None = None,
) -> int:
    """Serve until a stop is requested; returns the exit code. ``application_master``: this
    is a YARN session's ApplicationMaster, whose one SparkContext cannot be made again, so
    a master that loses its leadership ends (YARN's next attempt contends anew).
    ``application``: the program (and its arguments) of an application cluster."""
    if cfg.get(config, cfg.HA_TYPE) != "none":
        from weir.client.ha_master import run_highly_available  # noqa: PLC0415

        host = cfg.get(config, cfg.BIND_HOST)
        identifier = f"{host}:{cfg.get(config, cfg.JOBMANAGER_PORT)} pid {os.getpid()}"
        return run_highly_available(
            config,
            signals.requested,
            READY_LINE,
            identifier,
            after_start=signals.install,
            lead_once=application_master,
        )
    components = ClusterComponents(config, on_shutdown=signals.requested.set)
    try:
        address = components.start(dispatcher_port=cfg.get(config, cfg.JOBMANAGER_PORT))
    except WeirError as exc:
        # A known cause (port in use, bad Spark setting): its message says it all.
        logger.error("the master could not start: %s", exc)
        return 1
    # SparkContext installs its own SIGINT handler (cancel all jobs, raise
    # KeyboardInterrupt); ours must be the one in force while the master runs.
    signals.install()
    try:
        logger.info(
            "master started: Dispatcher at %s, ResourceManager at %s",
            address,
            components.resource_manager.address if components.resource_manager else "-",
        )
        if components.rest is not None:
            logger.info("REST API and web dashboard at %s", components.rest.url)
        print(READY_LINE.format(address=address), flush=True)
        if components.rest is not None:
            print(REST_LINE.format(url=components.rest.url), flush=True)
        if application is not None:
            _start_application(config, application, address, signals)
        signals.requested.wait()
    finally:
        components.close()
    logger.info("master stopped")
    return 0


def _start_application(
    config: dict[str, str], words: Sequence[str], address: str, signals: ShutdownSignals
) -> None:
    from weir.client import kubernetes_application as app  # noqa: PLC0415

    def tear_down() -> None:
        if app.in_a_pod():
            app.delete_own_deployment(config)  # Kubernetes then stops this pod
        else:
            signals.requested.set()

    app.ApplicationRunner(config, app.application_of(words), address, tear_down).start()


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ns = build_parser().parse_args(argv)
    try:
        config = load_master_config(ns)
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # Installed before the SparkContext exists: a stop requested while Spark starts is
    # honoured as soon as the services are up.
    signals = ShutdownSignals()
    signals.install()
    if ns.application is not None:
        if cfg.get(config, cfg.HA_TYPE) != "none":
            print(
                f"error: an application cluster runs without high availability "
                f"({cfg.HA_TYPE.key}: none)",
                file=sys.stderr,
            )
            return 1
        if not ns.application:
            print("error: --application needs the program to run", file=sys.stderr)
            return 1
    return run(config, signals, application=ns.application)


if __name__ == "__main__":
    sys.exit(main())
