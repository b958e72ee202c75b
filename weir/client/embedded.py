"""The embedded executor: the MiniCluster that ``env.execute()`` starts in the program's
own process when no cluster is registered (the ``embedded`` entry point of
``weir.pipeline_executors``), shared by every job of the process and stopped at its exit.

It stops before ``concurrent.futures`` retires its thread pools at exit: its gRPC servers
handle calls on such pools, and a call that arrives while the cluster stops (a
TaskManager leased for a job that found a free slot meanwhile, registering now) would
otherwise find its server's pool retired, and gRPC would print the traceback.

A program's first ``execute()`` waits for the Spark driver's JVM to boot (about a second
and a half here) and for the services to be imported (about half a second). The JVM is
launched first, from a thread, and the services are imported while it boots.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from weir.client.embedded_defaults import EMBEDDED_DEFAULTS
from weir.core import config as cfg
from weir.resourcemanager.spark_launcher import create_spark_context

if TYPE_CHECKING:
    from weir.client.executor import RemoteExecutor
    from weir.client.mini_cluster import MiniCluster

logger = logging.getLogger(__name__)

_shared: MiniCluster | None = None
_shared_lock = threading.Lock()


def shared_mini_cluster_executor() -> RemoteExecutor:
    """The executor of this process's embedded MiniCluster, started on first use and
    stopped when the interpreter exits."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = _start_shared()
            _at_exit_before_thread_pools(_close_shared_at_exit)
        return _shared.executor()


def _start_shared() -> MiniCluster:
    config = cfg.validate(dict(EMBEDDED_DEFAULTS))
    # Executors' Python workers must run this interpreter (it has Weir installed).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with ThreadPoolExecutor(1, thread_name_prefix="weir-spark-start") as pool:
        # The JVM is launched before any gRPC server exists in this process, as it must be.
        starting = pool.submit(create_spark_context, config)
        from weir.client.mini_cluster import MiniCluster  # noqa: PLC0415 (imported while the JVM boots)

        spark = starting.result()
    # The SparkContext is given, so the cluster never stops it: it ends with the process.
    return MiniCluster(config, spark_context=spark).start()


def _at_exit_before_thread_pools(callback: Callable[[], None]) -> None:
    """Run ``callback`` when the interpreter exits, before ``concurrent.futures`` stops
    accepting work: at exit Python first runs the hooks of ``threading`` (newest first;
    ``concurrent.futures`` registered its own when it was imported, before this), then
    those of ``atexit``. ``threading._register_atexit`` is how the standard library's own
    pools are stopped in order; an interpreter without it gets ``atexit``."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(callback)
        return
    register(callback)


def _close_shared_at_exit() -> None:
    # An exception here would end the interpreter's exit hooks, skipping those of the
    # standard library after it: it is logged instead.
    try:
        _close_shared()
    except Exception:
        logger.warning("stopping the embedded cluster at exit failed", exc_info=True)


def _close_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close(stop_spark=False)
            _shared = None
