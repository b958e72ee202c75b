"""``weir yarn-session`` (and ``deploy/bin/yarn-session.sh``), as Flink's yarn-session.sh:
start a long-running Weir session on YARN, attach to one, or stop one.

    weir yarn-session [-nm NAME] [-qu QUEUE] [-jm MEM] [-tm MEM] [-s SLOTS]
                      [-D key=value ...] [-d] [--ship-environment]
    weir yarn-session -id APPLICATION_ID [-d]         # attach
    weir yarn-session -id APPLICATION_ID --stop       # or: ... -id APPLICATION_ID stop

Started or attached, the client writes the ``.yarn-properties-<user>`` file
(``yarn.properties-file.location``) through which ``weir run/list/cancel/...`` without
``-m`` reach the session. Detached (``-d``), it prints the application id and how to stop
the session, and exits. Attached, it stays until ``stop`` (or ``quit``) is typed or a
SIGINT/SIGTERM arrives, and then stops the session; if the application ends meanwhile, it
says so and exits.

A stop asks the session's Dispatcher to shut the cluster down (``ShutDownCluster``): the
master stops its jobs as ``stop-cluster.sh`` stops them, and the application ends
FINISHED. Only when the Dispatcher cannot be reached is the application killed (it then
ends KILLED, and the client says so).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from types import FrameType

from weir.client.dispatcher_client import DispatcherGateway
from weir.client.leader_lookup import ZooKeeperDispatcherLookup
from weir.client.yarn_client import YarnRestClient
from weir.client.yarn_cluster_descriptor import (
    DEFAULT_START_TIMEOUT_S,
    YarnClusterDescriptor,
    YarnSession,
    cluster_id_of,
)
from weir.client.yarn_properties import (
    YarnSessionProperties,
    properties_file,
    read_properties,
    remove_properties,
    write_properties,
)
from weir.core import config as cfg
from weir.core.errors import ConfigurationError, RemoteError, WeirError
from weir.core.security import SecurityConfig

logger = logging.getLogger(__name__)

# A stop ends the master's jobs (the ResourceManager gives TaskManagers 10 s to stop and
# cancelled leases 30 s to end), then its SparkContext; YARN records the end a few
# seconds later.
STOP_TIMEOUT_S = 180.0
# How often an attached client looks at its application: a session that ended is noticed
# within this, and it costs YARN one REST call.
_WATCH_PERIOD_S = 2.0
_STOP_WORDS = ("stop", "quit")

DESCRIPTION = (
    "Start a Weir session on YARN, attach to one (-id), or stop one (-id APP stop), as "
    "Flink's yarn-session.sh. HADOOP_CONF_DIR (or YARN_CONF_DIR) names the directory of the "
    "cluster's yarn-site.xml and core-site.xml. spark-submit's output goes to "
    "weir-<user>-yarn-session-<host>.log in WEIR_LOG_DIR (else env.log.dir, else the "
    "temporary directory)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-nm", "--name", help="name of the YARN application")
    parser.add_argument("-qu", "--queue", help="YARN queue to submit to")
    parser.add_argument(
        "-jm",
        "--jobManagerMemory",
        dest="jobmanager_memory",
        metavar="MEM",
        help="memory of the master's JVM in the ApplicationMaster (spark.driver.memory), "
        "e.g. 1024m or 1g (a bare number is MB)",
    )
    parser.add_argument(
        "-tm",
        "--taskManagerMemory",
        dest="taskmanager_memory",
        metavar="MEM",
        help="memory of each TaskManager container's JVM (spark.executor.memory)",
    )
    parser.add_argument(
        "-s", "--slots", type=int, help="slots per TaskManager (taskmanager.numberOfTaskSlots)"
    )
    parser.add_argument(
        "-D",
        dest="dynamic",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a configuration key for the session (repeatable); spark.* keys reach spark-submit",
    )
    parser.add_argument(
        "-d", "--detached", action="store_true", help="print how to reach the session and exit"
    )
    parser.add_argument(
        "-id", "--applicationId", dest="application_id", help="attach to (or stop) this session"
    )
    parser.add_argument(
        "--ship-environment",
        action="store_true",
        help="pack this Python environment (Weir and its dependencies) and ship it "
        "(yarn.ship-environment), for NodeManagers without Weir installed",
    )
    parser.add_argument("--stop", action="store_true", help="stop the session of -id")
    parser.add_argument("action", nargs="?", choices=["stop"], help="`stop`: as --stop")


def _memory(text: str) -> str:
    """A -jm/-tm value as Spark takes it: a bare number is MB, as in Flink."""
    value = text.strip().lower()
    if value.isdigit():
        return f"{value}m"
    try:
        return f"{cfg.parse_memory_bytes(value) // (1 << 20)}m"
    except ValueError as exc:
        msg = f"{text!r} is no amount of memory; give e.g. 1024m, 1g or 1024 (MB)"
        raise ConfigurationError(msg) from exc


def dynamic_properties(ns: argparse.Namespace) -> dict[str, str]:
    """The session's own properties: the flags and every -D, as configuration keys."""
    properties: dict[str, str] = {}
    for text in ns.dynamic:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            msg = f"-D takes key=value, got {text!r}"
            raise ConfigurationError(msg)
        properties[key.strip()] = value.strip()
    if ns.name:
        properties[cfg.YARN_APPLICATION_NAME.key] = ns.name
    if ns.queue:
        properties[cfg.YARN_APPLICATION_QUEUE.key] = ns.queue
    if ns.jobmanager_memory:
        properties["spark.driver.memory"] = _memory(ns.jobmanager_memory)
    if ns.taskmanager_memory:
        properties["spark.executor.memory"] = _memory(ns.taskmanager_memory)
    if ns.slots is not None:
        properties[cfg.NUM_TASK_SLOTS.key] = str(ns.slots)
    if ns.ship_environment:
        properties[cfg.YARN_SHIP_ENVIRONMENT.key] = "true"
    return properties


def run(ns: argparse.Namespace, conf: Mapping[str, str]) -> int:
    """The command; returns its exit code. Raises WeirError for what the user can fix."""
    dynamic = dynamic_properties(ns)
    config = {**conf, **cfg.validate(dynamic)}
    if ns.stop or ns.action == "stop":
        application_id = ns.application_id or _recorded_application(config)
        return stop_session(config, application_id)
    if ns.application_id:
        session = attach(config, ns.application_id)
    else:
        session = start(config, dynamic)
    _print_session(session, detached=ns.detached)
    if ns.detached:
        return 0
    return _stay_attached(config, session)


def _recorded_application(config: Mapping[str, str]) -> str:
    recorded = read_properties(config)
    if recorded is None:
        msg = "which session? give its application id: weir yarn-session -id <applicationId> stop"
        raise ConfigurationError(msg)
    return recorded.application_id


def start(config: dict[str, str], dynamic: dict[str, str]) -> YarnSession:
    """Submit a session and wait until its Dispatcher answers; the properties file names
    it from the moment YARN accepted it."""
    descriptor = YarnClusterDescriptor(config)
    packed = None
    if cfg.get(config, cfg.YARN_SHIP_ENVIRONMENT):
        from weir.client.python_environment import pack_environment  # noqa: PLC0415

        print(f"Packing {sys.prefix} to ship it with the session.", flush=True)
        packed = pack_environment()
        print(
            f"Packed {packed.files} files, {packed.size_bytes / 1e6:.1f} MB, in "
            f"{packed.seconds:.1f} s: {packed.path}",
            flush=True,
        )
    recorded = dict(dynamic)

    def submitted(application_id: str) -> None:
        print(f"Submitted application {application_id}", flush=True)
        if cfg.get(config, cfg.HA_TYPE) == "zookeeper" and cfg.HA_CLUSTER_ID.key not in config:
            recorded[cfg.HA_CLUSTER_ID.key] = cluster_id_of(application_id)
        write_properties(config, YarnSessionProperties(application_id, "", recorded))

    started = time.monotonic()
    try:
        session = descriptor.deploy_session_cluster(
            packed.path if packed is not None else None, on_submitted=submitted
        )
    finally:
        if packed is not None:  # spark-submit uploaded it (or failed): it is not needed
            shutil.rmtree(packed.path.parent, ignore_errors=True)
    write_properties(
        config,
        YarnSessionProperties(session.application_id, session.dispatcher_address, recorded),
    )
    logger.info("session %s ready in %.1f s", session.application_id, time.monotonic() - started)
    return session


def attach(config: dict[str, str], application_id: str) -> YarnSession:
    """Find a running session's Dispatcher and record it in the properties file."""
    descriptor = YarnClusterDescriptor(config)
    report = descriptor.yarn.application(application_id)
    if report.ended:
        msg = f"YARN application {application_id} has ended ({report.state}); start a new session"
        raise WeirError(msg)
    session = descriptor.wait_for_session(application_id, DEFAULT_START_TIMEOUT_S)
    recorded = read_properties(config)
    dynamic = recorded.dynamic_properties if recorded is not None else {}
    if recorded is not None and recorded.application_id != application_id:
        dynamic = {}
    write_properties(
        config, YarnSessionProperties(application_id, session.dispatcher_address, dynamic)
    )
    return session


def _print_session(session: YarnSession, *, detached: bool) -> None:
    print(f"YARN application {session.application_id}: Weir session ready.")
    print(f"Dispatcher at {session.dispatcher_address}")
    if session.rest_url:
        print(f"REST API and web dashboard at {session.rest_url}")
    print("`weir run`, `weir list`, ... without -m now reach this session.")
    if detached:
        print(
            f"Stop it with: weir yarn-session -id {session.application_id} --stop "
            f"(or: yarn-session.sh -id {session.application_id} stop)",
            flush=True,
        )
    else:
        print("Type `stop` (or `quit`) and Enter to stop the session.", flush=True)


def stop_session(config: Mapping[str, str], application_id: str) -> int:
    """Stop the session as stop-cluster.sh stops a cluster and wait until YARN says the
    application ended; 0 when it ended FINISHED."""
    yarn = YarnRestClient.from_environment()
    report = yarn.application(application_id)
    if report.ended:
        print(f"YARN application {application_id} had already ended ({report.state}).")
        remove_properties(config, application_id)
        return 0
    print(f"Stopping the Weir session {application_id}.", flush=True)
    try:
        with session_gateway(config, application_id, yarn) as gateway:
            gateway.shut_down_cluster()
    except (RemoteError, ConfigurationError) as exc:
        print(
            f"warning: the session's Dispatcher could not be reached ({exc}); killing the "
            "application instead: its jobs end without a stop and it ends KILLED",
            file=sys.stderr,
        )
        yarn.kill(application_id)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while not report.ended:
        if time.monotonic() > deadline:
            msg = (
                f"YARN application {application_id} is still {report.state} "
                f"{STOP_TIMEOUT_S:.0f} s after the stop; kill it with `yarn application "
                f"-kill {application_id}`"
            )
            raise WeirError(msg)
        time.sleep(0.5)  # polling interval: YARN records the end
        report = yarn.application(application_id)
    remove_properties(config, application_id)
    print(
        f"YARN application {application_id} ended {report.state} ({report.final_status}).",
        flush=True,
    )
    return 0 if report.state == "FINISHED" else 1


@contextlib.contextmanager
def session_gateway(
    config: Mapping[str, str], application_id: str, yarn: YarnRestClient
) -> Iterator[DispatcherGateway]:
    """A gateway to a session's Dispatcher: found in ZooKeeper with high availability,
    else where its master said it is."""
    recorded = read_properties(config)
    if recorded is not None and recorded.application_id != application_id:
        recorded = None
    settings = {**config, **(recorded.dynamic_properties if recorded is not None else {})}
    security = SecurityConfig.from_config(settings)
    if cfg.get(settings, cfg.HA_TYPE) == "zookeeper":
        settings.setdefault(cfg.HA_CLUSTER_ID.key, cluster_id_of(application_id))
        lookup = ZooKeeperDispatcherLookup(settings)
        try:
            with DispatcherGateway(leader=lookup, security=security) as gateway:
                yield gateway
        finally:
            lookup.close()
        return
    address = recorded.dispatcher_address if recorded is not None else ""
    if not address:
        published = YarnClusterDescriptor(settings, yarn=yarn).published_session(application_id)
        if published is None:
            msg = f"the master of {application_id} has not said where its Dispatcher is"
            raise ConfigurationError(msg)
        address = published.dispatcher_address
    with DispatcherGateway(address, security=security) as gateway:
        yield gateway


def _stay_attached(config: Mapping[str, str], session: YarnSession) -> int:
    """Wait for `stop`/`quit` on stdin or a signal, then stop the session; return when the
    application ends by itself too."""
    requested = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        print(f"\n{signal.Signals(signum).name} received: stopping the session.", flush=True)
        requested.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    threading.Thread(
        target=_read_commands, args=(requested,), name="weir-yarn-session-stdin", daemon=True
    ).start()
    yarn = YarnRestClient.from_environment()
    while not requested.wait(_WATCH_PERIOD_S):
        report = yarn.application(session.application_id)
        if report.ended:
            print(
                f"YARN application {session.application_id} ended {report.state} "
                f"({report.final_status}) {report.diagnostics.strip()[:500]}",
                flush=True,
            )
            remove_properties(config, session.application_id)
            return 0 if report.state == "FINISHED" else 1
    return stop_session(config, session.application_id)


def _read_commands(requested: threading.Event) -> None:
    """Lines typed at the attached client; the end of input is no stop (a client started
    with its input closed stays until a signal)."""
    for line in sys.stdin:
        word = line.strip().lower()
        if word in _STOP_WORDS:
            requested.set()
            return
        if word:
            print(f"Unknown command {word!r}; type `stop` to stop the session.", flush=True)


def session_config(conf: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The client's configuration as ``weir run/list/...`` use it when no ``-m`` is given:
    with a session's properties file, the session's dynamic properties applied and its
    Dispatcher's address (None with high availability: ZooKeeper knows it)."""
    recorded = read_properties(conf)
    if recorded is None:
        return dict(conf), None
    settings = {**conf, **recorded.dynamic_properties}
    if cfg.get(settings, cfg.HA_TYPE) == "zookeeper":
        settings.setdefault(cfg.HA_CLUSTER_ID.key, cluster_id_of(recorded.application_id))
        return settings, None
    if not recorded.dispatcher_address:
        msg = (
            f"the YARN session {recorded.application_id} named in {properties_file(conf)} is "
            f"not ready yet; wait for it, or attach: weir yarn-session -id "
            f"{recorded.application_id} -d"
        )
        raise ConfigurationError(msg)
    return settings, recorded.dispatcher_address
