"""``print()`` in user code reaches where the job's print sinks write.

PyFlink shows what a UDF prints beside the output of ``DataStream.print()``. A task
with a print target (the client's stdout, for an embedded run) therefore routes what
its thread writes to ``sys.stdout`` there; other threads, and tasks without a target,
write to the TaskManager's ``taskmanager.out`` when it keeps one (``untargeted_output``),
else to the process's own stdout. ``sys.stdout`` and ``sys.stderr`` are replaced once per
process by routers that look up the writing thread's target, so tasks of different
jobs in one TaskManager each reach their own client.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, TextIO

_local = threading.local()
_install_lock = threading.Lock()
_untargeted: Any = None
"""Where writes without a print target go instead of the process's own stdout and
stderr (a TaskManager's ``taskmanager.out``); None: the process's own."""


class _ThreadRoutedStream(io.TextIOBase):
    """``sys.stdout`` (or ``sys.stderr``) while tasks run: the current thread's print
    target when it follows them (stdout), else the untargeted stream, else the original."""

    def __init__(self, original: Any, *, follows_print_target: bool) -> None:
        super().__init__()
        self._original = original
        self._follows_print_target = follows_print_target

    def _target(self) -> Any:
        if self._follows_print_target:
            target = getattr(_local, "target", None)
            if target is not None:
                return target
        return _untargeted or self._original

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
        if not isinstance(sys.stdout, _ThreadRoutedStream):
            sys.stdout = _ThreadRoutedStream(sys.stdout, follows_print_target=True)
        if not isinstance(sys.stderr, _ThreadRoutedStream):
            sys.stderr = _ThreadRoutedStream(sys.stderr, follows_print_target=False)


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


@contextmanager
def untargeted_output(stream: TextIO | io.TextIOBase) -> Iterator[None]:
    """While the block runs, what any thread writes to stdout or stderr without a print
    target goes to ``stream`` (the TaskManager's ``taskmanager.out``)."""
    global _untargeted
    _install()
    previous, _untargeted = _untargeted, stream
    try:
        yield
    finally:
        _untargeted = previous
