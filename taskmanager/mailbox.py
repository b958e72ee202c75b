"""The task mailbox: control actions other threads hand to a task's single thread.

Only the task thread touches operator state. Any other thread that needs something
done in the task (a checkpoint trigger, a timer firing, a notification) ``put``\\ s a
callable here; the task thread runs it between two batches. ``put`` also calls the
registered waker (the input gate's ``wakeup``) so a task blocked in ``poll`` gets
to its mailbox at once.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

Action = Callable[[], None]


class MailboxClosedError(RuntimeError):
    """``put`` after the task ended: the action would never run."""


class Mailbox:
    """A thread-safe FIFO of actions, drained by the task thread only."""

    def __init__(self) -> None:
        self._actions: collections.deque[Action] = collections.deque()
        self._signal = threading.Event()
        self._waker: Callable[[], None] | None = None
        self._closed = False

    def set_waker(self, waker: Callable[[], None] | None) -> None:
        """Called (from the putting thread) after every ``put``; e.g. ``InputGate.wakeup``."""
        self._waker = waker

    def put(self, action: Action) -> None:
        """Queue ``action`` for the task thread. Thread-safe; never blocks."""
        if self._closed:
            msg = "the task's mailbox is closed: the task has ended"
            raise MailboxClosedError(msg)
        self._actions.append(action)  # deque.append is atomic
        self._signal.set()
        waker = self._waker
        if waker is not None:
            waker()

    def has_actions(self) -> bool:
        return bool(self._actions)

    def run_pending(self) -> int:
        """Run every queued action in order (task thread only); returns how many ran."""
        actions = self._actions
        ran = 0
        self._signal.clear()
        while actions:
            actions.popleft()()
            ran += 1
        return ran

    def wait(self, timeout: float | None) -> bool:
        """Block until an action is queued or ``timeout`` seconds pass (idle sources)."""
        if self._actions:
            return True
        return self._signal.wait(timeout)

    def wake(self) -> None:
        """Wake a ``wait`` without queueing anything (used by cancel)."""
        self._signal.set()

    def close(self) -> list[Action]:
        """Refuse further actions; return those that never ran."""
        self._closed = True
        left = list(self._actions)
        self._actions.clear()
        return left
