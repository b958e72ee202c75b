"""The ``weir`` command line: run, list, cancel, savepoint, stop and info, as Flink's
``flink`` CLI.

weir run [-d] [-p N] [-m host:port] [-s PATH [-n]] job.py [args...]
weir list [-a] [-m host:port]
weir cancel [-m host:port] JOB_ID
weir savepoint [-m host:port] JOB_ID [DIR]
weir savepoint -d PATH | --inspect PATH
weir stop [-m host:port] [-p DIR] [-d] JOB_ID
weir checkpoints [-m host:port] JOB_ID
weir logs [-m host:port] [--taskmanager ID] [--log] [--tail-bytes N]
weir info [-p N] job.py [args...]
weir certs --out DIR --hosts HOST[,HOST...] [--days N]
weir ha status
weir kubernetes-session [-Dkey=value ...] [--dry-run]   (-Dexecution.attached=true: attach)
weir run-application -t kubernetes-application [-Dkey=value ...] job.py|local:///path [args...]
weir yarn-session [-nm NAME] [-qu QUEUE] [-jm MEM] [-tm MEM] [-s N] [-D k=v] [-d]
weir yarn-session -id APPLICATION_ID [stop]

Without -m, a client finds the Dispatcher of the Kubernetes session named with
``--target kubernetes-session -Dkubernetes.cluster-id=ID``, else through the YARN session
it started last (its .yarn-properties-<user> file), else in ZooKeeper under high
availability, else at jobmanager.rpc.address:port. Every command that talks to a cluster
takes -t/--target and -Dkey=value.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import runpy
import sys
import time
import tokenize
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from weir.client import yarn_session
from weir.client.dispatcher_client import DispatcherGateway, LeaderLookup
from weir.client.executor import RemoteExecutor
from weir.client.ha_status import format_ha_status, read_ha_status
from weir.client.job_client import ClusterJobClient
from weir.client.leader_lookup import HaDispatcherLookup, dispatcher_lookup
from weir.client.restart_reporter import RestartReporter
from weir.client.yarn_session import session_config
from weir.core import config as cfg
from weir.core import s3_settings
from weir.core.checkpoint import CheckpointStatsSnapshot
from weir.core.checkpoint.savepoint_storage import dispose_savepoint
from weir.core.completable_future import CompletableFuture
from weir.core.errors import JobExecutionError, WeirError
from weir.core.executor import JobExecutionResult, register_executor, set_context_configuration
from weir.core.job_graph import JobGraph
from weir.core.job_status import JobStatus
from weir.core.local_paths import absolute_local_path
from weir.core.security import SecurityConfig
from weir.core.task_manager_files import TaskManagerFileType
from weir.core.text_files import not_text_reason
from weir.graph.execution_plan import job_graph_plan_json
from weir.state import read_savepoint

CONF_FILE = "weir-conf.yaml"
# Flink's execution target of a Kubernetes session (flink run --target kubernetes-session).
KUBERNETES_SESSION_TARGET = "kubernetes-session"
# An application cluster's (flink list --target kubernetes-application): found the same way.
KUBERNETES_APPLICATION_TARGET = "kubernetes-application"


def _default_conf_dir() -> Path:
    env = os.environ.get("WEIR_CONF_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "deploy" / "conf"


def load_cli_config() -> dict[str, str]:
    path = _default_conf_dir() / CONF_FILE
    return cfg.load_config_file(path) if path.exists() else {}


def cluster_target(
    ns: argparse.Namespace, conf: dict[str, str]
) -> tuple[dict[str, str], str | None, HaDispatcherLookup | None]:
    """Which Dispatcher a command talks to: the one ``-m`` names; else, with ``--target
    kubernetes-session``, that of the Kubernetes session of ``-Dkubernetes.cluster-id``
    (found through its REST Service); else that of the YARN session of the properties
    file; else, with high availability, the leader found in
    ZooKeeper (followed when it changes); else the configured address. Returns the
    configuration to use (a session's own properties applied), the address or the lookup."""
    dynamic = getattr(ns, "dynamic", None)
    if dynamic:
        conf = {**conf, **cfg.validate(dict(dynamic))}
    if ns.jobmanager:
        return conf, ns.jobmanager, None
    if getattr(ns, "target", None) in (KUBERNETES_SESSION_TARGET, KUBERNETES_APPLICATION_TARGET):
        from weir.client.kubernetes_session import dispatcher_address  # noqa: PLC0415

        return conf, dispatcher_address(conf), None
    conf, session_address = session_config(conf)
    lookup = dispatcher_lookup(conf)
    if lookup is not None:
        return conf, None, lookup
    return conf, session_address or default_address(conf), None


@contextlib.contextmanager
def open_gateway(ns: argparse.Namespace, conf: dict[str, str]) -> Iterator[DispatcherGateway]:
    """A gateway to the Dispatcher ``cluster_target`` names."""
    conf, address, lookup = cluster_target(ns, conf)
    security = SecurityConfig.from_config(conf)
    try:
        if lookup is not None:
            gateway = DispatcherGateway(leader=lookup, security=security)
        else:
            gateway = DispatcherGateway(address or default_address(conf), security=security)
        with gateway:
            yield gateway
    finally:
        if lookup is not None:
            lookup.close()


def default_address(conf: dict[str, str]) -> str:
    host = cfg.get(conf, cfg.JOBMANAGER_ADDRESS)
    port = cfg.get(conf, cfg.JOBMANAGER_PORT)
    return f"{host}:{port}"


class _CliExecutor(RemoteExecutor):
    """Submits, tells the user the job id, and in detached mode returns at once; attached,
    it shows each restart of the job on stderr as it happens."""

    def __init__(
        self,
        address: str | None,
        detached: bool,
        security: SecurityConfig,
        leader: LeaderLookup | None = None,
    ) -> None:
        super().__init__(address, leader=leader, security=security)
        self.detached = detached
        self.submitted: list[str] = []
        self.reporters: list[RestartReporter] = []

    def submit(self, job_graph: JobGraph) -> ClusterJobClient:
        client = super().submit(job_graph)
        job_id = str(client.get_job_id())
        self.submitted.append(job_id)
        print(f"Job has been submitted with JobID {job_id}", flush=True)
        if self.detached:
            return _DetachedJobClient(self.gateway, job_id)
        self.reporters.append(RestartReporter(self.gateway, job_id, sys.stderr).start())
        return client

    def close_reporters(self) -> None:
        for reporter in self.reporters:
            reporter.close()


class _DetachedJobClient(ClusterJobClient):
    def get_job_execution_result(self) -> CompletableFuture:
        return CompletableFuture.completed(JobExecutionResult(str(self.get_job_id()), 0))


class _PlanCaptured(Exception):
    def __init__(self, graph: JobGraph) -> None:
        super().__init__("plan captured")
        self.graph = graph


class _PlanExecutor:
    def submit(self, job_graph: JobGraph) -> ClusterJobClient:
        raise _PlanCaptured(job_graph)


def _check_job_file(script: str) -> None:
    """Refuse a job file that is not a Python program, naming the file and what is wrong
    with it (binary data, text in another encoding, a syntax error), before it is run: run,
    it would end in a traceback through runpy's frames. A zip archive (a zipapp with its
    ``__main__.py``) is runpy's to open, as ``python app.pyz`` does."""
    if not os.path.isfile(script):
        msg = f"no job file {script!r}; give the path of a Python program"
        raise WeirError(msg)
    if zipfile.is_zipfile(script):
        return
    try:
        with open(script, "rb") as handle:
            source = handle.read()
    except OSError as exc:
        msg = f"cannot read job file {script!r}: {exc.strerror or exc}"
        raise WeirError(msg) from None
    refused = ""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:  # first lines that are not UTF-8, or an unknown coding line
        encoding, refused = "utf-8", f"is not a Python program: {exc.msg}"
    if reason := not_text_reason(source, encoding) or refused:
        msg = f"job file {script!r} {reason}; give the path of a Python program"
        raise WeirError(msg)
    try:
        compile(source, script, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f" (line {exc.lineno})" if exc.lineno else ""
        msg = f"job file {script!r} is not valid Python: {exc.msg}{where}"
        raise WeirError(msg) from None


def _run_script(script: str, args: Sequence[str]) -> None:
    _check_job_file(script)
    saved_argv = sys.argv
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = saved_argv


def cmd_run(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    conf, address, lookup = cluster_target(ns, conf)
    context = {}
    if cfg.PARALLELISM_DEFAULT.key in conf:  # the cluster's default, as flink run reads it
        context[cfg.PARALLELISM_DEFAULT.key] = conf[cfg.PARALLELISM_DEFAULT.key]
    if ns.parallelism is not None:
        context[cfg.PARALLELISM_DEFAULT.key] = str(ns.parallelism)
    if ns.from_savepoint:
        context[cfg.STATE_RECOVERY_PATH.key] = absolute_local_path(ns.from_savepoint)
    if ns.allow_non_restored_state:
        context[cfg.STATE_RECOVERY_IGNORE_UNCLAIMED_STATE.key] = "true"
    set_context_configuration(context)
    executor = _CliExecutor(address, ns.detached, SecurityConfig.from_config(conf), lookup)
    register_executor(executor)
    started = time.monotonic()
    try:
        _run_script(ns.script, ns.args)
    finally:
        executor.close_reporters()
        register_executor(None)
        if lookup is not None:
            lookup.close()
        set_context_configuration({})  # -p and -s are for this program only
    if not executor.submitted:
        print("The program did not submit a job (it never called execute()).", file=sys.stderr)
        return 1
    if not ns.detached:
        print("Program execution finished")
        for job_id in executor.submitted:
            print(f"Job with JobID {job_id} has finished.")
        print(f"Job Runtime: {int((time.monotonic() - started) * 1000)} ms")
    return 0


def cmd_list(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    with open_gateway(ns, conf) as gateway:
        jobs = gateway.list_jobs(include_terminated=ns.all)
        running = [j for j in jobs if not JobStatus[j.status].is_globally_terminal_state()]
        ended = [j for j in jobs if j not in running]
        print("------------------ Running/Restarting Jobs -------------------")
        for job in running or []:
            print(f"{_when(job.start_time_ms)} : {job.job_id} : {job.job_name} ({job.status})")
            if ns.verbose:
                _print_checkpoint_summary(gateway, job.job_id)
        if not running:
            print("No running jobs.")
        if ns.all:
            print("---------------------- Terminated Jobs -----------------------")
            for job in ended:
                print(f"{_when(job.start_time_ms)} : {job.job_id} : {job.job_name} ({job.status})")
                if ns.verbose:
                    _print_checkpoint_summary(gateway, job.job_id)
                if job.status == "FAILED" and ns.verbose:
                    print(job.failure_cause)
            if not ended:
                print("No terminated jobs.")
    return 0


def _print_checkpoint_summary(gateway: DispatcherGateway, job_id: str) -> None:
    stats = gateway.checkpoint_statistics(job_id)
    if stats.checkpointing_enabled:
        print(f"    checkpoints: {_counts(stats)}")
        if stats.latest_completed_path:
            print(f"    latest completed: {stats.latest_completed_path}")


def _counts(stats: CheckpointStatsSnapshot) -> str:
    return (
        f"triggered {stats.num_triggered}, in progress {stats.num_in_progress}, "
        f"completed {stats.num_completed}, failed {stats.num_failed}, "
        f"restored {stats.num_restored}"
    )


_HISTORY_COLUMNS = (
    ("ID", 6),
    ("STATUS", 11),
    ("TRIGGERED", 19),
    ("END-TO-END", 11),
    ("SYNC", 8),
    ("ASYNC", 8),
    ("ALIGNMENT", 10),
    ("STATE SIZE", 11),
    ("IN-FLIGHT", 10),
    ("ACKED", 7),
)


def cmd_checkpoints(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    with open_gateway(ns, conf) as gateway:
        stats = gateway.checkpoint_statistics(ns.job_id)
    if not stats.checkpointing_enabled:
        print(f"Checkpointing is not enabled for job {ns.job_id}.")
        return 0
    print(f"Checkpoints of job {ns.job_id}: {_counts(stats)}")
    print(f"Latest completed: {stats.latest_completed_path or '-'}")
    if stats.num_restored:
        print(
            f"Latest restored: checkpoint {stats.latest_restored_id} ({stats.latest_restored_path})"
        )
    print(" ".join(name.ljust(width) for name, width in _HISTORY_COLUMNS).rstrip())
    for e in stats.history:
        row = (
            str(e.checkpoint_id),
            e.status,
            _when(e.trigger_timestamp_ms),
            f"{e.end_to_end_duration_ms} ms",
            f"{e.sync_duration_ms} ms",
            f"{e.async_duration_ms} ms",
            f"{e.alignment_duration_ms} ms",
            _size(e.state_size_bytes),
            _size(e.persisted_in_flight_bytes),
            f"{e.num_acknowledged}/{e.num_subtasks}",
        )
        cells = zip(row, _HISTORY_COLUMNS, strict=True)
        print(" ".join(value.ljust(width) for value, (_, width) in cells).rstrip())
        if e.failure_message:
            print(f"       failure: {e.failure_message}")
    if not stats.history:
        print("No checkpoints yet.")
    return 0


def _size(num_bytes: int) -> str:
    if num_bytes < 1024:
        return f"{num_bytes} B"
    size, unit = num_bytes / 1024, "KB"
    for bigger in ("MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"


def _when(ms: int) -> str:
    return time.strftime("%d.%m.%Y %H:%M:%S", time.localtime(ms / 1000)) if ms else "-"


def cmd_cancel(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    with open_gateway(ns, conf) as gateway:
        gateway.cancel_job(ns.job_id)
    print(f"Cancelled job {ns.job_id}.")
    return 0


def cmd_logs(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    """What the TaskManagers' tasks printed (taskmanager.out) or logged, wherever they
    run: Flink's TaskManager stdout and log pages, through the Dispatcher."""
    file_type = TaskManagerFileType.LOG if ns.log else TaskManagerFileType.STDOUT
    failed = False
    with open_gateway(ns, conf) as gateway:
        hosts = {tm.resource_id: tm.data_host for tm in gateway.list_task_managers()}
        ids = [ns.taskmanager] if ns.taskmanager else sorted(hosts)
        if not ids:
            print("No TaskManagers are registered.")
        for resource_id in ids:
            try:
                found = gateway.task_manager_file(resource_id, file_type, ns.tail_bytes)
            except WeirError as exc:
                if ns.taskmanager:
                    raise
                # One TaskManager may have gone since the list: show the others.
                print(f"error: TaskManager {resource_id}: {exc}", file=sys.stderr)
                failed = True
                continue
            cut = f" (its last {_size(len(found.content))})" if found.truncated else ""
            host = hosts.get(resource_id, "?")
            print(f"==> TaskManager {resource_id} on {host}: {found.path}{cut} <==", flush=True)
            text = found.content.decode("utf-8", "replace")
            sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")
            sys.stdout.flush()
    return 1 if failed else 0


def cmd_savepoint(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    if ns.dispose:
        directory = dispose_savepoint(absolute_local_path(ns.dispose))
        print(f"Savepoint '{directory}' disposed.")
        return 0
    if ns.inspect:
        print(read_savepoint(absolute_local_path(ns.inspect)).describe())
        return 0
    if not ns.job_id:
        msg = "give the JobID of a running job (weir savepoint JOB_ID [DIR]), or -d/--inspect PATH"
        raise WeirError(msg)
    target = absolute_local_path(ns.directory) if ns.directory else None
    print(f"Triggering savepoint for job {ns.job_id}.", flush=True)
    with open_gateway(ns, conf) as gateway:
        path = gateway.trigger_savepoint(ns.job_id, target)
    print(f"Savepoint completed. Path: {path}")
    print("You can resume your program from this savepoint with the run command.")
    return 0


def cmd_stop(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    target = absolute_local_path(ns.savepoint_path) if ns.savepoint_path else None
    print(f"Suspending job {ns.job_id}{' with draining' if ns.drain else ''}.", flush=True)
    with open_gateway(ns, conf) as gateway:
        path = gateway.trigger_savepoint(ns.job_id, target, stop=True, drain=ns.drain)
    print(f"Savepoint completed. Path: {path}")
    return 0


def cmd_info(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    if ns.parallelism is not None:
        set_context_configuration({cfg.PARALLELISM_DEFAULT.key: str(ns.parallelism)})
    register_executor(_PlanExecutor())
    try:
        _run_script(ns.script, ns.args)
    except _PlanCaptured as captured:
        print(job_graph_plan_json(captured.graph))
        return 0
    finally:
        register_executor(None)
    print("The program did not call execute(); there is no plan to show.", file=sys.stderr)
    return 1


def cmd_certs(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    from weir.client.certificates import write_cluster_certificates  # noqa: PLC0415 (only here)

    hosts = [h.strip() for h in ",".join(ns.hosts).split(",") if h.strip()]
    written = write_cluster_certificates(ns.out, hosts, days=ns.days)
    print(f"Wrote a CA and the cluster's certificates to {written.ca_cert.parent}.")
    print("Copy that directory to the same path on every host of the cluster (the master and")
    print("each Spark worker), keep ca-key.pem elsewhere, and add to weir-conf.yaml:")
    print()
    for line in written.config_lines():
        print(f"  {line}")
    return 0


def cmd_kubernetes_session(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    from weir.client.kubernetes_session import session_config, start_session  # noqa: PLC0415

    return start_session(session_config(conf, ns.dynamic), ns.dry_run)


def cmd_run_application(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    from weir.client.kubernetes_application import run_application  # noqa: PLC0415
    from weir.client.kubernetes_session import session_config  # noqa: PLC0415

    return run_application(session_config(conf, ns.dynamic), ns.script, ns.args)


def _dynamic_property(text: str) -> tuple[str, str]:
    """``-Dkey=value`` (Flink's dynamic properties): one configuration key."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        msg = f"expected -Dkey=value, got -D{text}"
        raise argparse.ArgumentTypeError(msg)
    return key.strip(), value.strip()


def cmd_yarn_session(ns: argparse.Namespace, conf: dict[str, str]) -> int:
    return yarn_session.run(ns, conf)


def cmd_ha_status(_ns: argparse.Namespace, conf: dict[str, str]) -> int:
    print(format_ha_status(read_ha_status(conf)))
    return 0


def _parallelism(text: str) -> int:
    """``-p``'s value: a positive number, as ``flink run -p`` takes; leave ``-p`` out for
    the cluster's ``parallelism.default``."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = (
            f"the parallelism must be a positive number, got {text!r}; leave -p out to run "
            "at the cluster's parallelism.default"
        )
        raise argparse.ArgumentTypeError(msg)
    return value


def _add_target(parser: argparse.ArgumentParser) -> None:
    """Flink's ``-t/--target`` and ``-D``: a session found by its id instead of ``-m``."""
    parser.add_argument(
        "-t",
        "--target",
        choices=[KUBERNETES_SESSION_TARGET, KUBERNETES_APPLICATION_TARGET],
        help="find the Dispatcher of the Kubernetes session (or application cluster) "
        "-Dkubernetes.cluster-id names",
    )
    parser.add_argument(
        "-D",
        dest="dynamic",
        action="append",
        default=[],
        type=_dynamic_property,
        metavar="KEY=VALUE",
        help="a configuration key, e.g. -Dkubernetes.cluster-id=orders (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="weir", description="Run and manage Weir jobs.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a job program against a cluster")
    run.add_argument("-d", "--detached", action="store_true", help="return after submission")
    run.add_argument(
        "-p", "--parallelism", type=_parallelism, help="default parallelism of the job (1 or more)"
    )
    run.add_argument("-m", "--jobmanager", help="Dispatcher address host:port")
    run.add_argument(
        "-s",
        "--fromSavepoint",
        dest="from_savepoint",
        metavar="PATH",
        help="start from this retained checkpoint (chk-N or its _metadata) or savepoint",
    )
    run.add_argument(
        "-n",
        "--allowNonRestoredState",
        dest="allow_non_restored_state",
        action="store_true",
        help="drop the state of operators that are no longer in the job instead of failing",
    )
    run.add_argument("script")
    run.add_argument("args", nargs=argparse.REMAINDER)
    _add_target(run)
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list jobs")
    lst.add_argument("-a", "--all", action="store_true", help="also finished jobs")
    lst.add_argument(
        "-v", "--verbose", action="store_true", help="show checkpoint counts and failure causes"
    )
    lst.add_argument("-m", "--jobmanager")
    _add_target(lst)
    lst.set_defaults(func=cmd_list)

    cancel = sub.add_parser("cancel", help="cancel a job")
    cancel.add_argument("-m", "--jobmanager")
    cancel.add_argument("job_id")
    _add_target(cancel)
    cancel.set_defaults(func=cmd_cancel)

    checkpoints = sub.add_parser("checkpoints", help="show a job's checkpoint statistics")
    checkpoints.add_argument("-m", "--jobmanager")
    checkpoints.add_argument("job_id")
    _add_target(checkpoints)
    checkpoints.set_defaults(func=cmd_checkpoints)

    logs = sub.add_parser(
        "logs", help="show what the TaskManagers printed (taskmanager.out) or logged"
    )
    logs.add_argument("-m", "--jobmanager")
    logs.add_argument("--taskmanager", metavar="ID", help="only this TaskManager (resource id)")
    logs.add_argument("--log", action="store_true", help="taskmanager.log instead of .out")
    logs.add_argument(
        "--tail-bytes",
        type=int,
        default=0,
        metavar="N",
        help="at most the last N bytes of each file (default: the last 3 MiB)",
    )
    _add_target(logs)
    logs.set_defaults(func=cmd_logs)

    ha = sub.add_parser("ha", help="high availability: what ZooKeeper holds")
    ha_sub = ha.add_subparsers(dest="ha_command", required=True)
    ha_sub.add_parser(
        "status", help="leaders, stored job graphs and each job's latest checkpoint"
    ).set_defaults(func=cmd_ha_status)

    savepoint = sub.add_parser(
        "savepoint", help="take a savepoint of a running job, or dispose or inspect one"
    )
    savepoint.add_argument("-m", "--jobmanager")
    savepoint.add_argument(
        "-d", "--dispose", metavar="PATH", help="delete the savepoint at PATH (its directory)"
    )
    savepoint.add_argument(
        "--inspect", metavar="PATH", help="print the operators and state of the savepoint"
    )
    savepoint.add_argument("job_id", nargs="?")
    savepoint.add_argument(
        "directory",
        nargs="?",
        help="where the savepoint goes (default: execution.checkpointing.savepoint-dir)",
    )
    _add_target(savepoint)
    savepoint.set_defaults(func=cmd_savepoint)

    stop = sub.add_parser("stop", help="stop a job with a savepoint")
    stop.add_argument("-m", "--jobmanager")
    stop.add_argument(
        "-p",
        "--savepointPath",
        dest="savepoint_path",
        metavar="DIR",
        help="where the savepoint goes (default: execution.checkpointing.savepoint-dir)",
    )
    stop.add_argument(
        "-d",
        "--drain",
        action="store_true",
        help="emit MAX_WATERMARK first, so every event-time timer and window fires",
    )
    stop.add_argument("job_id")
    _add_target(stop)
    stop.set_defaults(func=cmd_stop)

    info = sub.add_parser("info", help="print a program's plan as JSON")
    info.add_argument("-p", "--parallelism", type=_parallelism)
    info.add_argument("script")
    info.add_argument("args", nargs=argparse.REMAINDER)
    info.set_defaults(func=cmd_info)

    certs = sub.add_parser(
        "certs", help="make a CA and the TLS certificates of a cluster (PEM files)"
    )
    certs.add_argument("--out", required=True, help="directory to write the files to")
    certs.add_argument(
        "--hosts",
        required=True,
        action="append",
        help="comma-separated addresses and names of the cluster's hosts (repeatable)",
    )
    certs.add_argument("--days", type=int, default=365, help="validity (default 365)")
    certs.set_defaults(func=cmd_certs)

    session = sub.add_parser(
        "kubernetes-session",
        help="start a session cluster on Kubernetes (the master's Deployment and Services)",
        description="Apply, with kubectl, the objects of a Weir session cluster: a Deployment "
        "for the master (the Spark driver, which creates the TaskManager pods), its Services, "
        "ConfigMap and RBAC. Configuration: weir-conf.yaml of WEIR_CONF_DIR, then -D.",
    )
    session.add_argument(
        "-D",
        dest="dynamic",
        action="append",
        default=[],
        type=_dynamic_property,
        metavar="KEY=VALUE",
        help="a configuration key, e.g. -Dkubernetes.cluster-id=orders (repeatable)",
    )
    session.add_argument(
        "--dry-run",
        action="store_true",
        help="print every manifest as one multi-document YAML and apply nothing",
    )
    session.set_defaults(func=cmd_kubernetes_session)

    application = sub.add_parser(
        "run-application",
        help="run a job program in a cluster of its own (-t kubernetes-application)",
        description="Start an application cluster on Kubernetes whose master runs the "
        "program: the objects of kubernetes-session, with the program (a file here, shipped in "
        "the cluster's ConfigMap, or local:///path of one in the image) and its arguments. "
        "The cluster is deleted when its jobs have ended, and kept when one failed. "
        "Configuration: weir-conf.yaml of WEIR_CONF_DIR, then -D.",
    )
    application.add_argument(
        "-t",
        "--target",
        required=True,
        choices=[KUBERNETES_APPLICATION_TARGET],
        help="where the cluster runs (Flink's execution target)",
    )
    application.add_argument(
        "-D",
        dest="dynamic",
        action="append",
        default=[],
        type=_dynamic_property,
        metavar="KEY=VALUE",
        help="a configuration key, e.g. -Dkubernetes.cluster-id=orders (repeatable)",
    )
    application.add_argument("script")
    application.add_argument("args", nargs=argparse.REMAINDER)
    application.set_defaults(func=cmd_run_application)

    yarn = sub.add_parser(
        "yarn-session",
        help="start, attach to or stop a Weir session on YARN (as Flink's yarn-session.sh)",
        description=yarn_session.DESCRIPTION,
    )
    yarn_session.add_arguments(yarn)
    yarn.set_defaults(func=cmd_yarn_session)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(
        level=os.environ.get("WEIR_LOG_LEVEL", "WARNING"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ns = build_parser().parse_args(argv)
    try:
        conf = load_cli_config()
        # What the client reads itself (savepoints to inspect or dispose) on s3://.
        s3_settings.configure(conf)
        return int(ns.func(ns, conf))
    except JobExecutionError as exc:
        print(
            f"\n------------------------------------------------------------\n"
            f"The program finished with the following exception:\n\n{exc}",
            file=sys.stderr,
        )
        return 1
    except WeirError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
