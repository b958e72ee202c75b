"""The function a TaskManager lease runs inside its Spark task.

``run_task_manager`` starts a TaskExecutor in the executor's Python worker, watches the
worker's parent process and SIGTERM, and returns (one summary line) only when the
TaskExecutor stops: a Stop RPC, a lost ResourceManager, a failed data plane, a dead parent,
SIGTERM. It is a plain module-level function, so Spark's pickling refers to it by name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping

from pyspark import TaskContext

from weir.core.errors import TaskManagerLostError
from weir.taskmanager.log_files import TaskManagerLogFiles
from weir.taskmanager.process_watchdog import ProcessWatchdog
from weir.taskmanager.task_executor import TaskExecutor

logger = logging.getLogger(__name__)


def spark_task_info() -> str:
    """Where in Spark this runs, from ``TaskContext`` (empty outside a Spark task).

    The Python worker cannot see its executor id; the task's identity is what it has.
    """
    context = TaskContext.get()
    if context is None:
        return ""
    group = context.getLocalProperty("spark.jobGroup.id") or "-"
    return (
        f"spark task {context.taskAttemptId()} (stage {context.stageId()}, partition "
        f"{context.partitionId()}, attempt {context.attemptNumber()}, job group {group})"
    )


def run_task_manager(config: Mapping[str, str], rm_address: str, lease_id: str) -> Iterator[str]:
    """Run one TaskManager until it is told to stop; yields one line saying why it stopped."""
    executor = TaskExecutor(config, rm_address, lease_id, spark_task_info=spark_task_info())
    with TaskManagerLogFiles(config, executor.resource_id):
        watchdog = ProcessWatchdog(executor.stop)
        watchdog.start()
        try:
            executor.start()
            reason = executor.wait()
        except TaskManagerLostError as exc:
            # No ResourceManager to serve (it is gone or shutting down): the lease ends
            # quietly; failing the Spark task would only add a stack trace to its logs.
            reason = f"did not start: {exc}"
        finally:
            executor.close()
            watchdog.close()
    if watchdog.parent_gone:
        # The Spark worker that would read our result is gone: nothing to return to.
        logging.shutdown()
        os._exit(1)
    yield f"TaskManager {executor.resource_id} stopped: {reason}"
