"""The embedded executor: the MiniCluster that ``env.execute()`` starts in the program's
own process when no cluster is registered (the ``embedded`` entry point of
``weir.pipeline_executors``), shared by every job of the process and stopped at its exit.

It is stopped when the main thread ends, once the program's other (non-daemon) threads
have ended too, and before Python stops the thread pools of ``concurrent.futures``
(which gRPC's servers run their calls on): a job still running then (a collect iterator
left open, an ``execute_async`` never awaited) is cancelled while its TaskManagers can
still report that they cancelled, so the program ends at once. Stopped later, at
``atexit``, the cluster would call servers that accept no call any more and wait out
every timeout (tens of seconds) before the process could end.

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
            _register_exit_hook(_close_shared_at_exit)
        return _shared.executor()


def _register_exit_hook(hook: Callable[[], None]) -> None:
    """Run ``hook`` when the main thread ends, before the thread pools of
    ``concurrent.futures`` stop (CPython runs these hooks last registered first, and that
    module registered its own when it was imported, before this); ``atexit`` where the
    interpreter has no such hook."""
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(hook)
        return
    try:
        register(hook)
    except RuntimeError:  # the interpreter is already shutting down
        atexit.register(hook)


def _close_shared_at_exit() -> None:
    """At the end of the main thread: wait for the program's own threads, as the
    interpreter would before ``atexit`` (a job they run keeps its cluster until they
    end), then stop the cluster. The workers of thread pools are not the program's: they
    stop after this, when ``concurrent.futures`` tells them to."""
    from concurrent.futures import thread as pool_threads  # noqa: PLC0415 (exit only)

    workers = set(getattr(pool_threads, "_threads_queues", {}))
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon and thread not in workers:
            thread.join()
    # An exception here would end the interpreter's exit hooks, skipping those of the
    # standard library after it: it is logged instead.
    try:
        _close_shared()
    except Exception:
        logger.warning("stopping the embedded cluster at exit failed", exc_info=True)


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


def _close_shared() -> None:
    global _shared
    with _shared_lock:
        if _shared is not None:
            _shared.close(stop_spark=False)
            _shared = None
