"""Enforcing a task's cancellation (Flink's TaskCanceler and TaskCancelerWatchDog).

``Task.cancel()`` asks politely: the mailbox wakes, partitions are released, the source
function's ``cancel()`` is called. User code stuck in a loop of its own never sees that.
So a cancelled task's thread is *interrupted* every ``task.cancellation.interval`` while it
runs: a ``TaskCanceledError`` is raised in it asynchronously (between two bytecodes of
whatever Python code it runs; code blocked in a C call gets it when the call returns),
but never once the task is ending (its cleanup and last report are not interrupted): the
task stops being interruptible under a lock the watchdog interrupts under, and withdraws
an interrupt raised but not yet seen. A task
still running ``task.cancellation.timeout`` after the cancel is a fatal error of the
TaskManager, as in Flink: the watchdog logs the task and its stack and ends the process,
so its Spark lease ends and the ResourceManager replaces it, rather than leaving a slot
held by a thread that will not stop. A timeout of 0 turns the watchdog off (interrupts
go on).

Contract: ``watch`` is called once per cancelled task, from any thread; the watchdog's
own thread ends when the task's thread ends (or the process does).
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from weir.core import config

logger = logging.getLogger(__name__)

# The exit code of a TaskManager that gives up on a task (as Flink's fatal errors exit
# with a non-zero code, so the process supervisor, here Spark, sees a failure).
FATAL_EXIT_CODE = 70


@dataclass(frozen=True, slots=True)
class CancellationSettings:
    interval_ms: int
    """``task.cancellation.interval``: between two interrupts of the task's thread."""
    timeout_ms: int
    """``task.cancellation.timeout``: after the cancel, the TaskManager gives up on the
    task and exits; 0 never."""


def cancellation_settings(
    task_manager_config: Mapping[str, str], job_config: Mapping[str, str]
) -> CancellationSettings:
    """The job's ``task.cancellation.*`` settings, else the TaskManager's, else Flink's."""
    merged = {**task_manager_config, **job_config}
    return CancellationSettings(
        interval_ms=config.get(merged, config.TASK_CANCELLATION_INTERVAL),
        timeout_ms=config.get(merged, config.TASK_CANCELLATION_TIMEOUT),
    )


def interrupt_thread(thread: threading.Thread, exception: type[BaseException]) -> bool:
    """Raise ``exception`` in ``thread`` at its next bytecode; False if it has ended."""
    ident = thread.ident
    if ident is None or not thread.is_alive():
        return False
    done = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(exception)
    )
    return done == 1


def withdraw_interrupt(thread: threading.Thread) -> None:
    """Drop an exception ``interrupt_thread`` raised in ``thread`` that it has not yet
    seen (none: nothing happens)."""
    ident = thread.ident
    if ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)


def thread_stack(thread: threading.Thread) -> str:
    frame = sys._current_frames().get(thread.ident or -1)
    return "".join(traceback.format_stack(frame)) if frame is not None else "(no stack)"


class TaskCancelerWatchDog:
    """Interrupts one cancelled task until it ends; past the timeout, ends the process
    through ``on_fatal`` (``os._exit`` unless a test injects another)."""

    def __init__(
        self,
        task_name: str,
        task_thread: threading.Thread,
        settings: CancellationSettings,
        exception: type[BaseException],
        *,
        interruptible: Callable[[], bool] = lambda: True,
        interrupt_lock: threading.Lock | None = None,
        on_fatal: Callable[[int], object] = os._exit,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._task_name = task_name
        self._task_thread = task_thread
        self._settings = settings
        self._exception = exception
        self._interruptible = interruptible
        # Held while it looks whether the task may be interrupted and interrupts it; the
        # task holds it while it stops being interruptible (and withdraws an interrupt
        # not yet seen), so that none reaches it afterwards.
        self._interrupt_lock = interrupt_lock or threading.Lock()
        self._on_fatal = on_fatal
        self._clock = clock
        self._thread = threading.Thread(
            target=self._run, name=f"cancel-watchdog {task_name}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        settings = self._settings
        interval_s = max(settings.interval_ms, 1) / 1000
        deadline = self._clock() + settings.timeout_ms / 1000 if settings.timeout_ms > 0 else None
        task = self._task_thread
        while True:
            wait_s = interval_s
            if deadline is not None:
                wait_s = min(wait_s, max(0.0, deadline - self._clock()))
            task.join(wait_s)
            if not task.is_alive():
                return
            if deadline is not None and self._clock() >= deadline:
                self._fatal()
                return
            with self._interrupt_lock:
                if not self._interruptible():
                    continue
                interrupt_thread(task, self._exception)
            logger.warning(
                "task %s is still running after its cancellation; interrupted it",
                self._task_name,
            )

    def _fatal(self) -> None:
        logger.critical(
            "task %s did not stop within %d ms of its cancellation "
            "(task.cancellation.timeout): the TaskManager exits, so that the slot it holds "
            "is freed with it. The task's thread was at:\n%s",
            self._task_name,
            self._settings.timeout_ms,
            thread_stack(self._task_thread),
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        self._on_fatal(FATAL_EXIT_CODE)
