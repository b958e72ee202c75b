"""What ``os._exit`` does when user code calls it on a task thread (Flink's
``cluster.intercept-user-system-exit``, checked by its FlinkSecurityManager).

A TaskManager is one process that runs the tasks of many jobs, one after the other and
side by side; a user function that ends the process would end them all, and take the
TaskManager's lease with it. ``install`` replaces ``os._exit`` once per process; tasks run
inside ``monitor_user_system_exit`` on their own thread. Calls from any other thread
(Weir's own, Spark's worker) exit as they always do.

Modes: ``THROW`` (Weir's default) raises ``UserSystemExitError`` in the task, which fails
with the task's name and the exit code while the process keeps serving; ``LOG`` logs the
call with its stack and exits; ``DISABLED`` exits.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from weir.core import config
from weir.core.errors import UserSystemExitError

logger = logging.getLogger(__name__)

_real_exit = os._exit
_local = threading.local()
_lock = threading.Lock()
_mode = "DISABLED"


def install(mode: str) -> None:
    """Watch ``os._exit`` in this process from now on, with ``mode`` (THROW, LOG or
    DISABLED). Idempotent; the last mode wins (one process serves one cluster)."""
    global _mode
    with _lock:
        _mode = mode.upper()
        if os._exit is not _guarded_exit:
            os._exit = _guarded_exit


@contextmanager
def monitor_user_system_exit(task_name: str) -> Iterator[None]:
    """While the block runs, this thread runs user code of task ``task_name``."""
    _local.task = task_name
    try:
        yield
    finally:
        _local.task = None


def _guarded_exit(status: int) -> NoReturn:
    task = getattr(_local, "task", None)
    if task is None or _mode == "DISABLED":
        _real_exit(status)
    if _mode == "LOG":
        logger.error(
            "user code in task %s called os._exit(%d): the TaskManager exits",
            task,
            status,
            stack_info=True,
        )
        _real_exit(status)  # log handlers flush every record: nothing is lost
    msg = (
        f"user code in task {task} called os._exit({status}): exit code {status}; the exit was "
        f"refused and the task failed instead ({config.INTERCEPT_USER_SYSTEM_EXIT.key} is "
        "THROW: the TaskManager runs other tasks too). Raise an exception to fail a task, "
        "or return to end it"
    )
    raise UserSystemExitError(msg)
