"""The real scheduled executor runs actions in time order and honours cancel and close."""

from __future__ import annotations

import threading

from weir.jobmanager.checkpoint import ThreadScheduledExecutor


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def test_runs_due_actions_in_order_and_skips_cancelled():
    clock = Clock()  # frozen at 0: only delay-0 actions are due
    ran: list[str] = []
    done = threading.Event()
    with ThreadScheduledExecutor(clock=clock) as executor:
        executor.schedule(10_000, lambda: ran.append("later"))
        executor.schedule(0, lambda: ran.append("a")).cancel()
        executor.schedule(0, lambda: ran.append("b"))
        executor.schedule(0, lambda: (_ for _ in ()).throw(RuntimeError("boom")))
        executor.schedule(0, done.set)
        assert done.wait(10)
    assert ran == ["b"]


def test_schedule_after_close_never_runs():
    executor = ThreadScheduledExecutor()
    executor.close()
    ran: list[int] = []
    executor.schedule(0, lambda: ran.append(1))
    assert ran == []
