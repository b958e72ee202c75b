"""The SparkTaskManagerLauncher: leases TaskManagers as long-running Spark tasks.

Each lease is a one-partition Spark job of its own, submitted from a background thread
in its own job group (``weir-tm-<lease id>``, interrupt on cancel). Its partition
function starts a TaskExecutor inside the executor's Python worker and returns only when
that TaskExecutor stops. One job per TaskManager, not one barrier job for all: losing
one executor must not abort the others (ray-project/ray PR #47493).

The partition function is named by a ``module:function`` string and imported on the
executor, so this package never imports the TaskManager's.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JError
from pyspark import InheritableThread, SparkConf, SparkContext
from pyspark.errors import PySparkRuntimeError

from weir.core import config as cfg
from weir.core.errors import ConfigurationError
from weir.resourcemanager.kubernetes_executors import is_kubernetes, kubernetes_spark_settings
from weir.resourcemanager.spark_driver_jvm import (
    EXTRA_JAVA_OPTIONS,
    archive_path,
    driver_environment,
    driver_java_options,
)
from weir.resourcemanager.spark_driver_launch import start_driver_gateway

logger = logging.getLogger(__name__)

DEFAULT_ENTRY_POINT = "weir.taskmanager.spark_entry:run_task_manager"
# With no end set (spark.dynamicAllocation.maxExecutors unset), YARN gives a session as
# many containers as its queue has room for: Flink's slotmanager.number-of-slots.max
# default. A request beyond what YARN grants waits for slot.request.timeout.
UNBOUNDED_TASK_MANAGERS = 2**31 - 1
PYTHON_DAEMON_MODULE = "weir.taskmanager.spark_daemon"
JOB_GROUP_PREFIX = "weir-tm-"


@dataclass(frozen=True, slots=True)
class LeaseEnded:
    """A lease's Spark job is over: ``error`` is None when it returned normally."""

    lease_id: str
    result: str
    error: str | None
    duration_ms: int


def run_lease(
    entry_point: str, config: dict[str, str], rm_address: str, lease_id: str, _rows: Iterable[Any]
) -> Iterator[str]:
    """The partition function of a lease job; runs on the executor."""
    module_name, _, function_name = entry_point.partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    yield from function(config, rm_address, lease_id)


def _start_driver_jvm(config: Mapping[str, str], settings: Mapping[str, str]) -> None:
    """Start the driver's JVM unless this process has one (a SparkContext stopped and
    created again reuses it): from the recorded launch command, else as PySpark does."""
    if SparkContext._gateway is not None:
        return
    master = {"spark.master": cfg.get(config, cfg.SPARK_MASTER)}
    gateway = start_driver_gateway(archive_path(), {**master, **settings})
    if gateway is not None:
        SparkContext._ensure_initialized(gateway=gateway)
        return
    # PySpark's own start: spark-submit, given the settings the JVM needs at launch.
    conf = SparkConf().setAll([*master.items(), *settings.items()])
    SparkContext._ensure_initialized(conf=conf)


def prestart_driver_jvm(config: Mapping[str, str]) -> None:
    """Start the driver's JVM now and warm it with a SparkContext on ``local[1]`` that is
    stopped at once: no application is registered with any cluster manager and no
    executor is held, yet creating the real context later (when a standby master wins)
    takes about a second instead of the JVM's start and class loading. Raises
    ConfigurationError as ``create_spark_context`` does."""
    settings = {k: v for k, v in config.items() if k.startswith("spark.")}
    settings[EXTRA_JAVA_OPTIONS] = driver_java_options(settings.get(EXTRA_JAVA_OPTIONS, ""))
    with driver_environment(cfg.get(config, cfg.BIND_HOST)):
        try:
            _start_driver_jvm(config, settings)
            warm = (
                SparkConf()
                .setAll(list(settings.items()))
                .setMaster("local[1]")
                .setAppName("weir-standby-warm-up")
                .set("spark.ui.enabled", "false")
            )
            SparkContext.getOrCreate(warm).stop()
        except PySparkRuntimeError as exc:
            msg = f"the Spark driver's JVM did not start ({exc}); check the spark.* settings"
            raise ConfigurationError(msg) from exc


def warm_up_python_workers(context: SparkContext) -> None:
    """Run one trivial job on every core of the context, so that each executor's Python
    daemon (with the TaskManager imported) is up before the first lease needs it: a
    standby master's warm start on a local master, where the application holds nothing
    another one could use."""
    cores = context.defaultParallelism
    context.parallelize(range(cores), cores).count()


def runs_in_application_master() -> bool:
    """Spark started this process as an application's main (``spark-submit --deploy-mode
    cluster``: on YARN, in the ApplicationMaster's container): its driver JVM is Spark's,
    and the SparkContext created on it is the application's one and only."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _yarn_settings() -> dict[str, str]:
    """On YARN, containers come and go with the leases, as a Flink session's TaskManagers
    do: a lease is a Spark task, and Spark's dynamic allocation asks YARN for an executor
    while a task waits and gives the executor back once it has run none for a moment.
    One core per executor, so one lease, one TaskManager, per container."""
    return {
        "spark.executor.cores": "1",
        "spark.dynamicAllocation.enabled": "true",
        # No shuffle service on the NodeManagers is needed: leases shuffle nothing.
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        # A fresh session holds only its ApplicationMaster.
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.initialExecutors": "0",
        # A container is asked for once a lease has waited a second
        # (schedulerBacklogTimeout: whole seconds, 1 at least).
        # An executor is idle only once its TaskManager was released, which the
        # ResourceManager does after resourcemanager.taskmanager-timeout: its container
        # goes back to YARN right after (Spark's 60 s would hold it on).
        "spark.dynamicAllocation.executorIdleTimeout": "1s",
    }


def driver_settings(config: Mapping[str, str]) -> dict[str, str]:
    """Every Spark setting of the driver that leases TaskManagers: Weir's defaults, where
    the driver binds and who may talk to it, what executor pods look like on Kubernetes
    (``kubernetes_executors``), and last the configuration's own ``spark.*`` keys, which
    win over all of these."""
    settings = {
        "spark.app.name": "weir",
        "spark.ui.enabled": "false",
        # The progress bar ([Stage 0:> ...]) would mix with the job's print() output.
        "spark.ui.showConsoleProgress": "false",
        # The executors' Python workers must run this interpreter (it has Weir installed).
        "spark.pyspark.python": sys.executable,
        # A lease is one attempt: the ResourceManager decides whether to replace a lost
        # TaskManager. local[N] never retries; on a cluster this makes it so.
        "spark.task.maxFailures": "1",
        # A TaskManager never ends on its own, so a speculative copy would be a second
        # TaskManager; executors come and go only as the ResourceManager leases.
        "spark.speculation": "false",
        "spark.dynamicAllocation.enabled": "false",
        # Executors fork their Python workers from a daemon that has the TaskManager
        # imported already (weir/taskmanager/spark_daemon.py): a lease starts faster.
        "spark.python.daemon.module": PYTHON_DAEMON_MODULE,
    }
    settings.update(_driver_network_settings(config))
    settings.update(kubernetes_spark_settings(config))
    if cfg.get(config, cfg.SPARK_MASTER) == "yarn":
        settings.update(_yarn_settings())
        # The executors run the Python spark-submit named (PYSPARK_PYTHON, which PySpark
        # reads): an installed one, or ./environment/bin/python of a shipped archive,
        # where this process's own path means nothing in another container.
        del settings["spark.pyspark.python"]
    settings.update({k: v for k, v in config.items() if k.startswith("spark.")})
    return settings


def create_spark_context(config: Mapping[str, str]) -> SparkContext:
    """A SparkContext for leasing TaskManagers, from ``driver_settings``; its JVM starts
    with Weir's options (``spark_driver_jvm``) and binds as the master binds when that is
    loopback.

    A SparkContext and no SparkSession: leases are RDD jobs, and a SparkSession's JVM side
    (Spark SQL's catalog and configuration) would add about a second to every start."""
    settings = driver_settings(config)
    if settings.get("spark.authenticate") != "true":
        logger.warning(
            "Spark's authentication is off: anyone who reaches the driver's RPC port can "
            "talk to it. Set spark.authenticate: true and spark.authenticate.secret here and "
            "on the Spark master and workers (spark-defaults.conf) to turn it on"
        )
    settings[EXTRA_JAVA_OPTIONS] = driver_java_options(settings.get(EXTRA_JAVA_OPTIONS, ""))
    conf = SparkConf().setAll(list(settings.items())).setMaster(cfg.get(config, cfg.SPARK_MASTER))
    with driver_environment(cfg.get(config, cfg.BIND_HOST)):
        try:
            _start_driver_jvm(config, settings)
            context = SparkContext.getOrCreate(conf)
        except PySparkRuntimeError as exc:
            if exc.getCondition() != "JAVA_GATEWAY_EXITED":
                raise
            given = ", ".join(
                f"{k}={v!r}" for k, v in sorted(config.items()) if k.startswith("spark.")
            )
            msg = (
                f"the Spark driver's JVM exited while starting (configured: "
                f"{given or 'no spark.* keys'}): Spark refused one of the spark.* settings "
                "(its own output above names it), or no Java runtime is installed "
                "(`java -version`); fix the setting and start again"
            )
            raise ConfigurationError(msg) from exc
    if settings.get("spark.ui.enabled") == "true":
        logger.info("Spark UI of the driver: %s", context.uiWebUrl)
    return context


def stop_spark_context(context: SparkContext) -> None:
    """Stop a SparkContext whose JVM may be gone already: a signal sent to the master's
    whole process group (systemd's default, ``kill -- -pgid``) stops the driver's JVM
    too, before the master gets to stop it. That is logged in one line, not as a Py4J
    stack trace; the JVM's own shutdown has ended the application either way."""
    try:
        context.stop()
    except (Py4JError, ConnectionError) as exc:
        logger.info("the Spark driver's JVM had stopped already (%s)", type(exc).__name__)
        # The rest of PySpark's stop(), and the dead JVM forgotten: a new context (the
        # next leadership of an HA master) starts a JVM of its own.
        accumulators = getattr(context, "_accumulatorServer", None)
        if accumulators is not None:
            accumulators.shutdown()
        with SparkContext._lock:
            SparkContext._active_spark_context = None
            SparkContext._gateway = None
            SparkContext._jvm = None


def _driver_network_settings(config: Mapping[str, str]) -> dict[str, str]:
    """Where the driver's RPC and BlockManager listen, and who may talk to them: bound as
    the master binds (not the machine's external interface), advertised as the master is,
    with Spark's authentication on wherever Weir can give it a secret, and Spark's own RPC
    encryption when the cluster's TLS is on. ``spark.*`` keys of the user's win."""
    bind_host = cfg.get(config, cfg.BIND_HOST)
    settings = {
        "spark.driver.bindAddress": bind_host or "0.0.0.0",
        "spark.driver.host": cfg.advertised_master_host(config),
    }
    local = cfg.get(config, cfg.SPARK_MASTER).startswith("local")
    # Spark generates the secret itself for local masters, and on Kubernetes hands the one
    # it generated to each executor pod (in the pod's environment); a standalone cluster's
    # master and workers must be given the same one (spark.authenticate.secret) by the user.
    if local or is_kubernetes(config) or config.get("spark.authenticate.secret"):
        settings["spark.authenticate"] = "true"
        if cfg.get(config, cfg.SSL_INTERNAL_ENABLED):
            settings["spark.network.crypto.enabled"] = "true"
    return settings


def derive_max_task_managers(config: Mapping[str, str], context: SparkContext) -> int:
    """``resourcemanager.taskmanager.max``, or derived from ``spark.master`` when 0: the
    cores of ``local[N]``; on YARN with dynamic allocation its most executors (one
    TaskManager each), unbounded unless set; else the executor cores Spark has."""
    configured = cfg.get(config, cfg.TASKMANAGERS_MAX)
    if configured > 0:
        return configured
    master = context.master or ""
    local = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master)
    if local:
        cores = local.group(1)
        if cores is None:
            return 1
        if cores == "*":
            return os.cpu_count() or 1
        return int(cores)
    instances = context.getConf().get("spark.executor.instances")
    if master.startswith("k8s://") and instances:
        # Executor pods register after the context starts: count the pods asked for, one
        # TaskManager each (kubernetes_executors gives every pod one core).
        return int(instances)
    if master == "yarn":
        conf = context.getConf()
        if conf.get("spark.dynamicAllocation.enabled", "false") == "true":
            limit = conf.get("spark.dynamicAllocation.maxExecutors", "")
            return int(limit) if limit and limit.isdigit() else UNBOUNDED_TASK_MANAGERS
    parallelism = context.defaultParallelism
    if parallelism < 1:
        msg = (
            f"cannot derive resourcemanager.taskmanager.max from spark.master={master!r}: "
            "Spark reports no executor cores; set resourcemanager.taskmanager.max"
        )
        raise ConfigurationError(msg)
    return parallelism


class SparkTaskManagerLauncher:
    """Leases TaskManagers on a SparkContext's executors; see the module docstring.

    ``on_lease_ended`` is called on the lease's thread when its Spark job ends.
    """

    def __init__(
        self,
        spark: SparkContext,
        config: Mapping[str, str],
        rm_address: Callable[[], str],
        on_lease_ended: Callable[[LeaseEnded], None],
        *,
        entry_point: str = DEFAULT_ENTRY_POINT,
    ) -> None:
        self._spark = spark
        self._config = dict(config)
        self._rm_address = rm_address
        self._on_lease_ended = on_lease_ended
        self._entry_point = entry_point
        self._max = derive_max_task_managers(config, spark)
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}
        self._started_at: dict[str, float] = {}

    @property
    def max_task_managers(self) -> int:
        return self._max

    def launch(self, lease_id: str) -> None:
        # InheritableThread pins a JVM thread, so the job group set on it is this
        # lease's alone.
        thread = InheritableThread(
            target=self._run, args=(lease_id,), name=f"weir-lease-{lease_id}", daemon=True
        )
        with self._lock:
            self._threads[lease_id] = thread
            self._started_at[lease_id] = time.monotonic()
        logger.info("leasing a TaskManager: lease %s", lease_id)
        thread.start()

    def submitted_at(self, lease_id: str) -> float | None:
        """When the lease was submitted (monotonic seconds), for lease-to-registration time."""
        with self._lock:
            return self._started_at.get(lease_id)

    def _run(self, lease_id: str) -> None:
        sc = self._spark
        started = time.monotonic()
        result, error = "", None
        try:
            sc.setJobGroup(
                job_group(lease_id), f"Weir TaskManager lease {lease_id}", interruptOnCancel=True
            )
            function = functools.partial(
                run_lease, self._entry_point, self._config, self._rm_address(), lease_id
            )
            rows = sc.parallelize([0], 1).mapPartitions(function).collect()
            result = "; ".join(str(row) for row in rows)
        except Exception as exc:  # the job failed or was cancelled: reported below
            error = lease_error(exc)
        finally:
            with self._lock:
                self._threads.pop(lease_id, None)
        ended = LeaseEnded(lease_id, result, error, int((time.monotonic() - started) * 1000))
        try:
            self._on_lease_ended(ended)
        except Exception:
            # The thread is ending anyway; the callback's failure must not vanish.
            logger.warning("lease %s: handling its end failed", lease_id, exc_info=True)

    def cancel(self, lease_id: str) -> None:
        """Kill the lease's Spark job (the fallback when a Stop RPC did not end it)."""
        logger.info("cancelling the Spark job of lease %s", lease_id)
        # By job id rather than by group: the lease's job may end on its own between the
        # caller's check and this call, and Spark warns on stderr about a job group with no
        # active job, while a finished job id is passed over quietly.
        group = job_group(lease_id)
        for job_id in self._spark.statusTracker().getJobIdsForGroup(group):
            self._spark._jsc.sc().cancelJob(job_id, f"Weir cancelled TaskManager lease {lease_id}")

    def is_running(self, lease_id: str) -> bool:
        with self._lock:
            return lease_id in self._threads

    def running_leases(self) -> list[str]:
        with self._lock:
            return list(self._threads)

    def join(self, lease_id: str, timeout: float | None) -> bool:
        """Wait for a lease's job to end; True if it has."""
        with self._lock:
            thread = self._threads.get(lease_id)
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()


def job_group(lease_id: str) -> str:
    return f"{JOB_GROUP_PREFIX}{lease_id}"


# The executor's Python has no Weir (or not the TaskManager's modules): the most common
# reason a lease fails on a cluster whose workers run another Python.
_WEIR_MISSING = re.compile(r"No module named 'weir(\.taskmanager[\w.]*)?'")


def lease_error(exc: BaseException) -> str:
    """What ended a lease's Spark job, in a line: the Python worker's own error when Spark
    relays one (the worker could not start, or the TaskManager raised), else the first
    lines of the JVM's message (which carries the whole JVM stack after them)."""
    text = str(exc).strip() or type(exc).__name__
    lines = text.splitlines()
    cause = _worker_start_error(lines) or _python_exception(lines) or " ".join(lines[:3])
    if _WEIR_MISSING.search(cause):
        cause += (
            " (the executors' Python cannot import Weir: install Weir there, or point "
            "spark.pyspark.python / PYSPARK_PYTHON at a Python that has it)"
        )
    return cause[:1000]


def _worker_start_error(lines: list[str]) -> str:
    """A Python worker that exited before it started: Spark quotes its stderr between
    ``Error from python worker:`` and ``PYTHONPATH was:``."""
    start = _line_with(lines, "Error from python worker:")
    if start is None:
        return ""
    quoted = []
    for line in lines[start + 1 :]:
        if line.startswith(("PYTHONPATH was:", "org.apache.", "\tat ")):
            break
        quoted.append(line.strip())
    return " ".join(q for q in quoted if q)


def _python_exception(lines: list[str]) -> str:
    """A Python exception on the executor: the line after its traceback's frames."""
    start = _line_with(lines, "Traceback (most recent call last):")
    if start is None:
        return ""
    exception = ""
    for line in lines[start + 1 :]:
        if line.startswith(("\tat ", " SQLSTATE")):
            break
        if line.startswith("  File "):
            exception = ""
        elif line and not line.startswith(" ") and not exception:
            exception = line
    return exception


def _line_with(lines: list[str], marker: str) -> int | None:
    return next((i for i, line in enumerate(lines) if marker in line), None)
