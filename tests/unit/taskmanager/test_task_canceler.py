"""TaskCancelerWatchDog: interrupts a cancelled task's thread until it ends, and past the
timeout declares the TaskManager's fatal error (here an injected exit)."""

from __future__ import annotations

import threading
import time

from weir.taskmanager.task_canceler import (
    FATAL_EXIT_CODE,
    CancellationSettings,
    TaskCancelerWatchDog,
    cancellation_settings,
)


class Interrupted(Exception):
    pass


def _spinning_thread(swallow: bool) -> tuple[threading.Thread, threading.Event, list[str]]:
    """A thread in a pure-Python loop; with ``swallow`` it ignores every exception."""
    stop, seen = threading.Event(), []

    def run() -> None:
        while not stop.is_set():
            try:
                while not stop.is_set():
                    pass
            except Interrupted:
                seen.append("interrupted")
                if not swallow:
                    return

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, stop, seen


def test_a_busy_loop_is_interrupted_and_ends():
    thread, stop, seen = _spinning_thread(swallow=False)
    fatal: list[int] = []
    watchdog = TaskCancelerWatchDog(
        "busy (1/1)",
        thread,
        CancellationSettings(20, 10_000),
        Interrupted,
        on_fatal=fatal.append,
    )
    watchdog.start()
    watchdog.join(10)
    stop.set()
    assert not thread.is_alive()
    assert seen == ["interrupted"]
    assert fatal == []


def test_a_task_that_swallows_interrupts_is_a_fatal_error_after_the_timeout(caplog):
    thread, stop, seen = _spinning_thread(swallow=True)
    fatal: list[int] = []
    watchdog = TaskCancelerWatchDog(
        "stubborn (1/1)",
        thread,
        CancellationSettings(20, 300),
        Interrupted,
        on_fatal=fatal.append,
    )
    with caplog.at_level("CRITICAL"):
        watchdog.start()
        watchdog.join(10)
    stop.set()
    thread.join(5)
    assert fatal == [FATAL_EXIT_CODE]
    assert len(seen) >= 2  # interrupted repeatedly before giving up
    (record,) = [r for r in caplog.records if r.levelname == "CRITICAL"]
    assert "stubborn (1/1)" in record.getMessage()
    assert "_spinning_thread" in record.getMessage() or "run" in record.getMessage()


def test_no_interrupt_while_the_task_is_ending():
    thread, stop, seen = _spinning_thread(swallow=False)
    fatal: list[int] = []
    watchdog = TaskCancelerWatchDog(
        "ending (1/1)",
        thread,
        CancellationSettings(10, 200),
        Interrupted,
        interruptible=lambda: False,
        on_fatal=fatal.append,
    )
    watchdog.start()
    watchdog.join(10)
    stop.set()
    thread.join(5)
    assert seen == []
    assert fatal == [FATAL_EXIT_CODE]


def test_a_timeout_of_zero_never_gives_up():
    """No deadline: the task is interrupted until it ends, however long that takes."""
    thread, stop, seen = _spinning_thread(swallow=True)
    fatal: list[int] = []
    interruptible = threading.Event()
    interruptible.set()
    watchdog = TaskCancelerWatchDog(
        "slow (1/1)",
        thread,
        CancellationSettings(10, 0),
        Interrupted,
        interruptible=interruptible.is_set,
        on_fatal=fatal.append,
    )
    watchdog.start()
    deadline = time.monotonic() + 10
    while len(seen) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)  # polling what the thread recorded; the condition decides
    # As a task does while it ends: no interrupt may land in the thread's last steps.
    interruptible.clear()
    time.sleep(0.05)  # longer than the interval: an interrupt already sent has landed
    stop.set()
    watchdog.join(10)
    assert len(seen) >= 5 and not thread.is_alive()
    assert fatal == []


def test_settings_come_from_the_job_then_the_task_manager_then_flink():
    assert cancellation_settings({}, {}) == CancellationSettings(30_000, 180_000)
    tm = {"task.cancellation.timeout": "1 min"}
    assert cancellation_settings(tm, {}).timeout_ms == 60_000
    job = {"task.cancellation.timeout": "0", "task.cancellation.interval": "500 ms"}
    assert cancellation_settings(tm, job) == CancellationSettings(500, 0)


class _ObservedLock:
    """A lock that counts the watchdog's attempts to take it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.attempts = 0
        self.attempted = threading.Condition()

    def __enter__(self) -> _ObservedLock:
        with self.attempted:
            self.attempts += 1
            self.attempted.notify_all()
        self.lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release()

    def await_attempts(self, n: int) -> None:
        with self.attempted:
            assert self.attempted.wait_for(lambda: self.attempts >= n, timeout=10)


def test_a_task_that_stops_being_interruptible_under_the_lock_is_not_interrupted():
    """The watchdog looks whether the task may be interrupted, and interrupts it, under
    the lock the task holds while it stops being interruptible: waiting on the lock, it
    then sees that it may not, and the thread's last steps run undisturbed."""
    lock = _ObservedLock()
    interruptible = threading.Event()
    interruptible.set()
    seen: list[str] = []
    holding, watchdog_done = threading.Event(), threading.Event()

    def run() -> None:
        try:
            lock.lock.acquire()
            holding.set()
            lock.await_attempts(1)  # the watchdog waits on the lock
            interruptible.clear()
            lock.lock.release()
            lock.await_attempts(4)  # three more passes of the watchdog
            for _ in range(1000):  # bytecodes at which an interrupt would land
                pass
        except Interrupted:
            seen.append("interrupted")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert holding.wait(10)
    watchdog = TaskCancelerWatchDog(
        "ending (1/1)",
        thread,
        CancellationSettings(5, 0),
        Interrupted,
        interruptible=interruptible.is_set,
        interrupt_lock=lock,  # type: ignore[arg-type]
        on_fatal=lambda code: watchdog_done.set(),
    )
    watchdog.start()
    thread.join(10)
    watchdog.join(10)
    assert not thread.is_alive()
    assert seen == []
