"""Windows held as columns in a checkpoint: the open windows of a built-in aggregate
(``ColumnWindow``) as Arrow column blocks (``weir.core.column_blocks``), and back.

A snapshot borrows every window's arrays (``lend_windows``: nothing is copied on the
task thread); where the snapshot is written, their keys, window starts and accumulators
are gathered into one record batch per accumulator type (no Python per key), the arrays
given back, and the backend cuts the batches by key group. A restore
(``windows_of_blocks``) gathers the blocks of the key groups the subtask owns and cuts
their rows by window (no sort for one window) into one ``ColumnWindow`` per window (keys
scattered into dense arrays, or sorted when sparse), or, for an operator that keeps its
windows as dicts (an AggregateFunction called record by record, or another built-in
than the one that wrote them), into ``{key: accumulator}`` dicts, the accumulators
exactly what the built-in's ``add`` makes. Either way the windows fire as if they had
never been checkpointed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from weir.core.column_blocks import block_arrays, window_batch, window_entries
from weir.taskmanager.operators.window_columns import ColumnWindow, Lease, LentArrays
from weir.taskmanager.state.backend import NamespacedTable

__all__ = ["LentWindows", "lend_windows", "put_blocks_as_entries", "windows_of_blocks"]


class LentWindows:
    """Windows' arrays lent to a snapshot (``lend_windows``): ``record_batches`` reads
    them (any thread), ``release`` gives them back to their windows."""

    __slots__ = ("_lease", "_lent")

    def __init__(self, lent: list[tuple[int, LentArrays]], lease: Lease) -> None:
        self._lent = lent
        self._lease = lease

    def record_batches(self) -> list[Any]:
        """Record batches ``(key, window_start, acc[, count])`` of every key of the
        windows, copies of the arrays: one per built-in and accumulator type (usually
        one)."""
        return _record_batches(self._lent)

    def release(self) -> None:
        self._lease.release()


def lend_windows(windows: Mapping[int, ColumnWindow]) -> LentWindows:
    """The arrays of ``windows`` (``{start: window}``), lent until the result's
    ``release``."""
    lease = Lease()
    return LentWindows([(start, window.lend(lease)) for start, window in windows.items()], lease)


def _record_batches(lent: list[tuple[int, LentArrays]]) -> list[Any]:
    """Whole windows joined into batches of about ``CUT_ROWS`` rows: what the cut by key
    group takes a chunk at a time, never joined into one array of every row."""
    from weir.core.column_blocks import CUT_ROWS  # noqa: PLC0415 (pyarrow)

    parts: dict[tuple[str, str], list[tuple[int, Any, Any, Any]]] = {}
    for start, arrays in lent:
        keys, acc, counts = arrays.held()
        if len(keys):
            parts.setdefault((arrays.kind, acc.dtype.str), []).append((start, keys, acc, counts))
    blocks = []
    for (kind, _), held in parts.items():
        rows = 0
        first = 0
        for i, (_, keys, _, _) in enumerate(held):
            rows += len(keys)
            if rows >= CUT_ROWS or i == len(held) - 1:
                blocks.append(_joined(kind, held[first : i + 1]))
                rows, first = 0, i + 1
    return blocks


def _joined(kind: str, held: list[tuple[int, Any, Any, Any]]) -> Any:
    keys = np.concatenate([k for _, k, _, _ in held])
    starts = np.concatenate([np.full(len(k), s, dtype=np.int64) for s, k, _, _ in held])
    acc = np.concatenate([a for _, _, a, _ in held])
    counts = np.concatenate([c for _, _, _, c in held]) if kind == "avg" else None
    return window_batch(kind, keys, starts, acc, counts)


def windows_of_blocks(
    blocks: Iterable[Any], kind: str | None
) -> dict[int, ColumnWindow | dict[Any, Any]]:
    """The windows ``{start: contents}`` of restored column ``blocks``: ``ColumnWindow``s
    when the operator adds built-in ``kind`` over columns and the blocks hold that
    built-in's accumulators, else dicts ``{key: accumulator}``."""
    by_type: dict[tuple[str, str], list[tuple[Any, Any, Any, Any]]] = {}
    for block in blocks:
        block_kind, keys, starts, acc, counts = block_arrays(block)
        if len(keys):
            by_type.setdefault((block_kind, acc.dtype.str), []).append((keys, starts, acc, counts))
    windows: dict[int, ColumnWindow | dict[Any, Any]] = {}
    for (block_kind, _), parts in by_type.items():
        keys = np.concatenate([p[0] for p in parts])
        starts = np.concatenate([p[1] for p in parts])
        acc = np.concatenate([p[2] for p in parts])
        counts = np.concatenate([p[3] for p in parts]) if block_kind == "avg" else None
        for start, rows in _rows_by_window(starts):
            window_keys = keys if rows is None else keys[rows]
            window_acc = acc if rows is None else acc[rows]
            window_counts = counts if counts is None or rows is None else counts[rows]
            contents: ColumnWindow | dict[Any, Any]
            if block_kind == kind:
                contents = ColumnWindow.from_arrays(
                    block_kind, window_keys, window_acc, window_counts
                )
            else:
                values: Iterable[Any] = window_acc.tolist()
                if window_counts is not None:
                    values = zip(values, window_counts.tolist(), strict=True)
                contents = dict(zip(window_keys.tolist(), values, strict=True))
            known = windows.get(start)
            if known is not None:  # the same window in two accumulator types: as dicts
                merged = known if isinstance(known, dict) else known.as_dict()
                merged.update(contents if isinstance(contents, dict) else contents.as_dict())
                contents = merged
            windows[start] = contents
    return windows


def _rows_by_window(starts: Any) -> list[tuple[int, Any]]:
    """Each window start of ``starts`` and its rows (None: all of them, one window)."""
    first = int(starts[0])
    if bool((starts == first).all()):
        return [(first, None)]
    distinct, which = np.unique(starts, return_inverse=True)
    order = np.argsort(which, kind="stable")
    cuts = np.searchsorted(which[order], np.arange(1, len(distinct)))
    return [
        (int(start), rows)
        for start, rows in zip(distinct.tolist(), np.split(order, cuts), strict=True)
    ]


def put_blocks_as_entries(table: NamespacedTable, blocks: list[Any]) -> None:
    """Put restored column ``blocks`` into ``table`` as entries, key by key (an operator
    that keeps its windows in the table itself)."""
    for key, per in window_entries(blocks).items():
        for namespace, value in per.items():
            table.put(key, namespace, value)
