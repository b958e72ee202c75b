"""How the window operator's two paths name an aligned window in state, and restoring
one's state into the other.

The general path names a window by its ``TimeWindow``, as Flink does; the aligned fast
path (``weir.taskmanager.operators.window_aligned``) by its start, an ``int``, in the
contents table and in the timers' namespaces alike. A job may change path between a
checkpoint and its restore (a window that gets a trigger of its own leaves the fast
path; one whose trigger goes back to the default takes it), so the operator renames
what it restored before it reads it: ``TimeWindow(start, start + size)`` for the
general path, ``window.start`` for the fast one. Only an aligned assigner's windows are
renamed (tumbling or sliding, whose windows are ``size`` long); state of one path is
always named one way, so a look at the first entry of a table tells whether it needs it.
A process window function's ``window_state()`` is renamed likewise, each state the first
time it is asked for (its name comes from the function's descriptor).

Windows restored without timers (the fast path keeps event-time windows without
lateness, and a built-in aggregate's processing-time windows, with no timer per key) get
on the general path the timers the default trigger and the cleanup would have
registered (``time_restored_windows``), so they fire as they would have.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from weir.core.windowing import MAX_LONG_VALUE, TimeWindow
from weir.taskmanager.operators.timers import InternalTimerService
from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable

__all__ = ["aligned_size", "rename_timers", "rename_windows", "time_restored_windows"]


def aligned_size(assigner: Any) -> int | None:
    """The length of an aligned assigner's windows (tumbling or sliding, which every
    window of is ``size`` long from its start); None for any other assigner."""
    size = getattr(assigner, "_size", None)
    if type(size) is not int or not hasattr(assigner, "_offset"):
        return None
    if hasattr(assigner, "merge_windows"):
        return None
    return size


def _renamed(window: Any, size: int, as_time_windows: bool) -> Any:
    if as_time_windows:
        return TimeWindow(window, window + size) if type(window) is int else window
    return window.start if type(window) is TimeWindow else window


def _needs_renaming(first: Any, as_time_windows: bool) -> bool:
    return (type(first) is int) if as_time_windows else (type(first) is TimeWindow)


def _first(entries: Iterator[tuple[Any, Any, Any]]) -> tuple[Any, Any, Any] | None:
    return next(entries, None)


def rename_windows(table: NamespacedTable, size: int, *, as_time_windows: bool) -> None:
    """The windows of ``table`` (namespaces: windows) named as the path reads them."""
    first = _first(table.entries())
    if first is None or not _needs_renaming(first[1], as_time_windows):
        return
    for key, window, value in list(table.entries()):
        renamed = _renamed(window, size, as_time_windows)
        if renamed is not window:
            table.remove(key, window)
            table.put(key, renamed, value)


def rename_timers(table: NamespacedTable, size: int, *, as_time_windows: bool) -> None:
    """The timers of ``table`` (namespaces: ``(timestamp, window)``) likewise."""
    first = _first(table.entries())
    if first is None or not _needs_renaming(first[1][1], as_time_windows):
        return
    for key, (timestamp, window), value in list(table.entries()):
        renamed = _renamed(window, size, as_time_windows)
        if renamed is not window:
            table.remove(key, (timestamp, window))
            table.put(key, (timestamp, renamed), value)


def time_restored_windows(
    contents: NamespacedTable,
    backend: KeyedStateBackend,
    timers: InternalTimerService,
    *,
    event_time: bool,
    allowed_lateness: int,
) -> None:
    """On the general path: restored windows without timers (kept by the fast path with
    none per key) get the default trigger's and the cleanup's, as Flink's windows hold
    them (at ``max_timestamp``, and in event time also at ``max_timestamp + allowed
    lateness``). Nothing is looked at when any timer was restored."""
    if timers.has_event_time_timers() or timers.has_processing_time_timers():
        return
    for key, window, _ in list(contents.entries()):
        if type(window) is not TimeWindow:
            continue
        backend.current_key = key
        max_ts = window.max_timestamp()
        if not event_time:
            timers.register_processing_time_timer(window, max_ts)
            continue
        timers.register_event_time_timer(window, max_ts)
        cleanup = min(max_ts + allowed_lateness, MAX_LONG_VALUE)
        if cleanup not in (max_ts, MAX_LONG_VALUE):
            timers.register_event_time_timer(window, cleanup)
