"""The ProcessWatchdog: stops a TaskManager when its parent process dies or on SIGTERM.

Inside Spark the parent is the PySpark daemon that forked the Python worker; when the
executor goes, the worker must not linger as an orphan holding ports and a working
directory (Ray's ``start_ray_node.py`` learned the same). SIGTERM means a graceful stop.

Threading: the watchdog polls on its own daemon thread and calls ``on_stop(reason)``
once, from that thread or from the signal handler (the main thread). ``on_stop`` must
only ask for a stop (set an event), not do the cleanup itself.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

logger = logging.getLogger(__name__)

# Polling getppid() is a syscall; twice a second notices a dead parent well before
# Spark's own timeouts and costs nothing.
DEFAULT_POLL_INTERVAL_S = 0.5


class ProcessWatchdog:
    """Calls ``on_stop`` when the parent process is gone or SIGTERM arrives.

    The SIGTERM handler is installed only on the main thread (Python allows no other)
    and the previous handler is restored on ``close()``: a Spark Python worker is reused
    for later tasks.
    """

    def __init__(
        self,
        on_stop: Callable[[str], None],
        *,
        poll_interval_s: float = DEFAULT_POLL_INTERVAL_S,
        handle_sigterm: bool = True,
    ) -> None:
        self._on_stop = on_stop
        self._poll_interval_s = poll_interval_s
        self._handle_sigterm = handle_sigterm
        self._parent_pid = os.getppid()
        self._closed = threading.Event()
        self._fired = threading.Lock()
        self._has_fired = False
        self._thread: threading.Thread | None = None
        self._previous_handler: Any = None
        self._installed = False
        self.parent_gone = False

    def start(self) -> None:
        self._thread = threading.Thread(target=self._watch, name="weir-tm-watchdog", daemon=True)
        self._thread.start()
        if self._handle_sigterm and threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
            self._installed = True

    def _fire(self, reason: str) -> None:
        with self._fired:
            if self._has_fired:
                return
            self._has_fired = True
        self._on_stop(reason)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self._fire("SIGTERM received")

    def _parent_alive(self) -> bool:
        # An orphan is re-parented (to init or a subreaper), so getppid() changes.
        if os.getppid() != self._parent_pid:
            return False
        try:
            os.kill(self._parent_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def _watch(self) -> None:
        while not self._closed.wait(self._poll_interval_s):
            if not self._parent_alive():
                self.parent_gone = True
                logger.warning(
                    "parent process %d is gone; stopping the TaskManager", self._parent_pid
                )
                self._fire(f"parent process {self._parent_pid} is gone")
                return

    def close(self) -> None:
        """Stop watching and restore the previous SIGTERM handler. Idempotent."""
        self._closed.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._installed and threading.current_thread() is threading.main_thread():
            previous = self._previous_handler
            # None: the handler was not installed from Python; the default is what was there.
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
            self._installed = False

    def __enter__(self) -> ProcessWatchdog:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
