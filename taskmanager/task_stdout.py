"""``print()`` in user code reaches where the job's print sinks write.

PyFlink shows what a UDF prints beside the output of ``DataStream.print()``. A task
with a print target (the client's stdout, for an embedded run) therefore routes what
its thread writes to ``sys.stdout`` there; other threads, and tasks without a target,
write to the process's own stdout as before. ``sys.stdout`` is replaced once per
process by a router that looks up the writing thread's target, so tasks of different
jobs in one TaskManager each reach their own client.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

_local = threading.local()
_install_lock = threading.Lock()


class _ThreadRoutedStdout(io.TextIOBase):
    """``sys.stdout`` while tasks run: the current thread's target, else the original."""

    def __init__(self, original: Any) -> None:
        super().__init__()
        self._original = original

    def _target(self) -> Any:
        return getattr(_local, "target", None) or self._original

    def write(self, text: str) -> int:
        self._target().write(text)
        return len(text)

    def flush(self) -> None:
        self._target().flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return bool(getattr(self._target(), "isatty", lambda: False)())

    def fileno(self) -> int:
        return int(self._original.fileno())

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._original, "encoding", "utf-8"))


def _install() -> None:
    with _install_lock:
        if not isinstance(sys.stdout, _ThreadRoutedStdout):
            sys.stdout = _ThreadRoutedStdout(sys.stdout)


@contextmanager
def task_stdout(print_target: str | None) -> Iterator[None]:
    """While the block runs, what this thread prints goes to ``print_target`` (a file
    appended to, line by line); nothing changes without a target."""
    if print_target is None:
        yield
        return
    _install()
    target: IO[str] = open(print_target, "a", buffering=1, encoding="utf-8")
    _local.target = target
    try:
        yield
    finally:
        _local.target = None
        target.close()
