"""Open windows of a built-in aggregate held as columns (the window operator's aligned
event-time and processing-time paths, batches of columns): which windows a batch's records fall in
(``place_in_windows``), and one window's accumulators for all its keys
(``ColumnWindow``), which ``add_to_window`` adds a batch's keys and values to.

A ``ColumnWindow`` is one window's contents for all its keys, as arrays indexed by key:
each key's accumulator (a count; a sum; a smallest or largest value; an average's sum
and count). Keys are integers. While the keys of a window span a range not much wider
than their number, the arrays are dense over that range (slot ``key - low``, with a
mask of the keys present), and a batch is added with no sort at all: ``np.bincount``
for counts, ``np.add.at`` for sums (one value at a time, in record order, so a float sum
is the one ``add`` makes record after record), ``np.minimum.at`` and ``np.maximum.at``
(``extreme_at``: of equal zeros the first is kept, as ``add`` keeps it; NaN never reaches
these arrays).
Otherwise they are sparse: the keys sorted, a record's slot found with
``np.searchsorted``. A window fires in one pass over its arrays, its keys in ascending
order (Flink fires the keys of one window in no defined order).

``as_dict`` gives the accumulators as the built-in's ``add`` makes them (``int``,
``float``, ``(sum, count)``), which is how a checkpoint stores them, key by key in key
groups, so a snapshot restores at any parallelism and into the records path. A window
is kept as columns only while its keys are integers and its values numbers the arrays
hold exactly; otherwise the operator keeps it a dict ``{key: accumulator}``.

A checkpoint borrows a window's arrays rather than copying them on the task thread
(``ColumnWindow.lend``): the snapshot reads them on the checkpoint writer thread and
gives them back (``Lease.release``). A window whose arrays are lent copies them before
it changes them (only ``add`` changes them in place), and hands a copy of its results on
when it fires, until they are given back: windows behind the newest are rarely changed
again, so most are never copied.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

_NUMERIC = "biuf"
_KEYS = "iu"  # integer keys: equal as numbers exactly when equal as Python values
_DENSE_SLACK = 4  # dense while the key range is at most this many times the keys, ...
_DENSE_MIN = 1 << 16  # ... or at most this wide


def _dense_enough(span: int, keys: int) -> bool:
    return span <= max(_DENSE_SLACK * keys, _DENSE_MIN)


def average_column(sums: Any, counts: Any) -> Any:
    """Averages of ``sums`` over ``counts`` as one array; None when only Python's
    arithmetic gives them exactly (integer sums past 2**53)."""
    if sums.dtype.kind == "f" or not len(sums) or int(np.abs(sums).max()) < 2**53:
        return sums / counts
    return None


class Lease:
    """Arrays lent to a snapshot that reads them on another thread until ``release``
    (``ColumnWindow.lend``). ``released`` is set once, by the reader; the owner only
    reads it."""

    __slots__ = ("released",)

    def __init__(self) -> None:
        self.released = False

    def release(self) -> None:
        self.released = True


@dataclass(frozen=True, slots=True)
class LentArrays:
    """A window's arrays as they were when lent (``ColumnWindow.lend``)."""

    kind: str
    low: int | None
    keys: Any
    acc: Any
    present: Any
    counts: Any

    def held(self) -> tuple[Any, Any, Any]:
        """``(keys ascending, accumulators, an average's counts or None)`` of the keys
        present."""
        keys, acc, counts = _held(self.low, self.keys, self.acc, self.present, self.counts)
        return keys, acc, counts if self.kind == "avg" else None


def _held(
    low: int | None, keys: Any, acc: Any, present: Any, counts: Any, *, with_keys: bool = True
) -> tuple[Any, Any, Any]:
    """The keys (None unless ``with_keys``), accumulators and (averages) counts of the
    keys present: the arrays themselves when every slot holds a key."""
    if acc is None:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if low is None:
        return keys, acc, counts
    if present.all():
        held = np.arange(low, low + len(acc)) if with_keys else None
        return held, acc, counts
    at = np.flatnonzero(present)
    return (at + low if with_keys else None), acc[at], None if counts is None else counts[at]


class ColumnWindow:
    """One window's accumulators for built-in ``kind`` (count, sum, min, max, avg); see
    the module docstring."""

    __slots__ = ("acc", "counts", "keys", "kind", "lease", "low", "present", "span")

    def __init__(self, kind: str, span: tuple[int, int, int] | None = None) -> None:
        """``span``: the keys a window like this one held (the smallest, the largest, how
        many), so that dense arrays are made wide enough for them at once rather than
        widened batch by batch (None: not known)."""
        self.kind = kind
        self.span = span
        self.acc: Any = None  # count, sum, min or max; an average's sum
        self.counts: Any = None  # an average's count
        self.low: int | None = None  # dense: the key of slot 0
        self.present: Any = None  # dense: which slots hold a key
        self.keys: Any = None  # sparse: the keys, sorted
        self.lease: Lease | None = None  # the arrays are lent to a snapshot (``lend``)

    @classmethod
    def from_dict(cls, kind: str, contents: dict[Any, Any]) -> ColumnWindow | None:
        """The window of ``contents`` (``{key: accumulator}``), or None when its keys are
        not integers or its accumulators not numbers of one type."""
        window = cls(kind)
        if not contents:
            return window
        keys = np.asarray(list(contents))
        if keys.dtype != np.int64:
            return None
        values = list(contents.values())
        counts = None
        if kind == "avg":
            if any(type(v) is not tuple for v in values):
                return None
            sums = [v[0] for v in values]
            counts = np.asarray([v[1] for v in values], dtype=np.int64)
            values = sums
        if len({type(v) for v in values}) != 1:
            return None  # ints and floats mixed (or None): the arrays would change them
        acc = np.asarray(values)
        if acc.dtype.kind not in _NUMERIC:
            return None
        order = np.argsort(keys)
        window.keys = keys[order]
        window.acc = acc[order]
        window.counts = None if counts is None else counts[order]
        return window

    def _acc_dtype(self, values: Any) -> Any:
        kind = self.kind
        if kind == "count":
            return np.dtype(np.int64)
        if kind in ("min", "max"):
            return values.dtype
        return np.dtype(np.float64) if values.dtype.kind == "f" else np.dtype(np.int64)

    def _empty(self, n: int, dtype: Any) -> Any:
        """Accumulators of ``n`` keys not seen yet: what the first value's ``add`` is
        applied to (min and max start at the largest and smallest value of the type)."""
        if self.kind == "min":
            top = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
            return np.full(n, top, dtype=dtype)
        if self.kind == "max":
            bottom = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
            return np.full(n, bottom, dtype=dtype)
        return np.zeros(n, dtype=dtype)

    def add(self, keys: Any, values: Any, bounds: tuple[int, int] | None = None) -> bool:
        """Add records with ``keys`` (and ``values``, None for a count), in their order.
        False, and nothing changed, when the arrays cannot hold them exactly as ``add``
        would make them (the operator then keeps the window as a dict). ``bounds``: the
        smallest and largest key of a batch ``keys`` are part of, if known (they spare
        looking for the keys' own)."""
        kind = self.kind
        if not isinstance(keys, np.ndarray) or keys.dtype.kind not in _KEYS:
            return False
        if not len(keys):
            return True
        if self.lease is not None:
            self._own()
        if keys.dtype != np.int64:
            high = bounds[1] if bounds is not None else int(keys.max())
            if keys.dtype.kind == "u" and high > np.iinfo(np.int64).max:
                return False
            keys = keys.astype(np.int64)
        if kind != "count":
            if not isinstance(values, np.ndarray) or values.dtype.kind not in _NUMERIC:
                return False
            if kind in ("min", "max") and values.dtype.kind not in "iuf":
                return False
            if values.dtype.kind == "f" and kind in ("min", "max") and np.isnan(values).any():
                return False  # Python's comparisons with NaN are not numpy's min/max
        dtype = self._acc_dtype(values)
        if self.acc is not None and dtype != self.acc.dtype:
            return False
        if self.low is not None and self._add_in_range(keys, values, bounds):
            return True
        kmin, kmax = int(keys.min()), int(keys.max())
        if self.acc is None:
            low, high, expected = kmin, kmax, len(keys)
            if self.span is not None and _dense_enough(
                max(kmax, self.span[1]) - min(kmin, self.span[0]) + 1,
                max(len(keys), self.span[2]),
            ):
                low, high = min(kmin, self.span[0]), max(kmax, self.span[1])
                expected = max(expected, self.span[2])
            if _dense_enough(high - low + 1, expected):
                self.low = low
                self.acc = self._empty(high - low + 1, dtype)
                self.present = np.zeros(high - low + 1, dtype=bool)
                if kind == "avg":
                    self.counts = np.zeros(high - low + 1, dtype=np.int64)
                if self._add_in_range(keys, values):
                    return True
            else:
                self.keys = keys[:0]
                self.acc = self._empty(0, dtype)
                if kind == "avg":
                    self.counts = np.zeros(0, dtype=np.int64)
        if self.low is not None:
            if not self._fit_dense(kmin, kmax, len(keys)):
                self._to_sparse()
        elif len(self.keys):
            low, high = min(kmin, int(self.keys[0])), max(kmax, int(self.keys[-1]))
            if _dense_enough(high - low + 1, len(self.keys) + len(keys)):
                self._to_dense(low, high)  # the keys have filled their range
                if self._add_in_range(keys, values):
                    return True
        if self.low is not None:
            slots = keys - self.low
            n = len(self.acc)
            self.present[slots] = True
        else:
            slots, n = self._sparse_slots(keys)
        self._update(slots, n, values)
        return True

    def _add_in_range(self, keys: Any, values: Any, bounds: tuple[int, int] | None = None) -> bool:
        """Dense arrays: add a batch whose keys all have slots already, the keys present
        marked from their counts (one pass over the slots and one over the arrays; a batch
        much smaller than the arrays is scattered instead); False, and nothing changed,
        when a key lies outside."""
        low = self.low
        assert low is not None
        kmin, kmax = bounds if bounds is not None else (int(keys.min()), int(keys.max()))
        if kmin < low or kmax >= low + len(self.acc):
            return False
        slots = keys - low
        kind = self.kind
        if len(keys) * 4 < len(self.acc):  # few records for the arrays: scattered
            self.present[slots] = True
            if kind == "count":
                np.add.at(self.acc, slots, 1)
                return True
            if kind == "avg":
                np.add.at(self.counts, slots, 1)
            self._update(slots, len(self.acc), values, counted=True)
            return True
        seen = np.bincount(slots)
        n = len(seen)
        present = self.present[:n]
        np.logical_or(present, seen, out=present)
        if kind == "count":
            self.acc[:n] += seen
            return True
        if kind == "avg":
            self.counts[:n] += seen
        self._update(slots, len(self.acc), values, counted=True)
        return True

    def _fit_dense(self, kmin: int, kmax: int, batch: int) -> bool:
        """Widen the dense arrays to hold keys ``kmin..kmax``; False when that would make
        them too sparse."""
        low = self.low
        assert low is not None
        high = low + len(self.acc) - 1
        new_low, new_high = min(low, kmin), max(high, kmax)
        if new_low == low and new_high == high:
            return True
        if not _dense_enough(new_high - new_low + 1, int(self.present.sum()) + batch):
            return False
        before, after = low - new_low, new_high - high
        dtype = self.acc.dtype
        self.acc = np.concatenate([self._empty(before, dtype), self.acc, self._empty(after, dtype)])
        self.present = np.concatenate([np.zeros(before, bool), self.present, np.zeros(after, bool)])
        if self.counts is not None:
            self.counts = np.concatenate(
                [np.zeros(before, np.int64), self.counts, np.zeros(after, np.int64)]
            )
        self.low = new_low
        return True

    def _to_dense(self, low: int, high: int) -> None:
        """Sparse arrays made dense over keys ``low..high``."""
        at = self.keys - low
        acc = self._empty(high - low + 1, self.acc.dtype)
        acc[at] = self.acc
        present = np.zeros(high - low + 1, dtype=bool)
        present[at] = True
        if self.counts is not None:
            counts = np.zeros(high - low + 1, dtype=np.int64)
            counts[at] = self.counts
            self.counts = counts
        self.acc, self.present, self.low, self.keys = acc, present, low, None

    def _to_sparse(self) -> None:
        assert self.low is not None
        at = np.flatnonzero(self.present)
        self.keys = at + self.low
        self.acc = self.acc[at]
        if self.counts is not None:
            self.counts = self.counts[at]
        self.low = self.present = None

    def _sparse_slots(self, keys: Any) -> tuple[Any, int]:
        """The slots of ``keys`` among the sorted keys, the new ones inserted first."""
        unique = np.unique(keys)
        at = np.searchsorted(self.keys, unique)
        known = np.zeros(len(unique), dtype=bool)
        inside = at < len(self.keys)
        known[inside] = self.keys[at[inside]] == unique[inside]
        if not known.all():
            new = unique[~known]
            where = at[~known]
            dtype = self.acc.dtype
            self.keys = np.insert(self.keys, where, new)
            self.acc = np.insert(self.acc, where, self._empty(len(new), dtype))
            if self.counts is not None:
                self.counts = np.insert(self.counts, where, np.zeros(len(new), np.int64))
        return np.searchsorted(self.keys, keys), len(self.keys)

    def _update(self, slots: Any, n: int, values: Any, *, counted: bool = False) -> None:
        """Add the values at ``slots``; ``counted``: an average's counts are added
        already."""
        kind = self.kind
        if kind == "count":
            self.acc += np.bincount(slots, minlength=n)
        elif kind == "sum":
            np.add.at(self.acc, slots, values)
        elif kind == "avg":
            np.add.at(self.acc, slots, values)
            if not counted:
                self.counts += np.bincount(slots, minlength=n)
        elif kind == "min":
            extreme_at(np.minimum, self.acc, slots, values)
        else:
            extreme_at(np.maximum, self.acc, slots, values)

    def lend(self, lease: Lease) -> LentArrays:
        """The arrays, lent until ``lease`` is released: they stay as they are until
        then (the window copies them before it changes them)."""
        self.lease = lease
        return LentArrays(self.kind, self.low, self.keys, self.acc, self.present, self.counts)

    def _own(self) -> None:
        """The arrays this window's own again: copies while they are lent."""
        lease = self.lease
        self.lease = None
        if lease is None or lease.released:
            return
        for name in ("acc", "counts", "keys", "present"):
            array = getattr(self, name)
            if array is not None:
                setattr(self, name, array.copy())

    def _held(self, *, keys: bool = True) -> tuple[Any, Any, Any]:
        """The keys (None unless ``keys``), accumulators and (averages) counts of the
        keys present: the arrays themselves when every slot holds a key."""
        return _held(self.low, self.keys, self.acc, self.present, self.counts, with_keys=keys)

    def key_span(self) -> tuple[int, int, int] | None:
        """The smallest and largest key and how many keys the window holds (a ``span``
        for the next window); None when empty."""
        if self.low is None or self.present is None:
            if self.keys is None or not len(self.keys):
                return None
            return int(self.keys[0]), int(self.keys[-1]), len(self.keys)
        return self.low, self.low + len(self.acc) - 1, int(np.count_nonzero(self.present))

    def __len__(self) -> int:
        if self.acc is None:
            return 0
        return len(self.keys) if self.low is None else int(np.count_nonzero(self.present))

    def result_column(self) -> Any:
        """The built-in's results, one per key in ascending key order, as one array; None
        when only Python's arithmetic gives them exactly (an average of integers past
        2**53)."""
        _, acc, counts = self._held(keys=False)
        if self.kind != "avg":
            lease = self.lease
            # Handed on to be read and changed by what follows: not the lent arrays.
            return acc if lease is None or lease.released else acc.copy()
        return average_column(acc, counts)

    def results(self) -> list[Any]:
        """The built-in's results, one per key, in ascending key order."""
        column = self.result_column()
        if column is not None:
            return column.tolist()  # type: ignore[no-any-return]
        _, acc, counts = self._held()
        return [s / c for s, c in zip(acc.tolist(), counts.tolist(), strict=True)]

    def as_dict(self) -> dict[Any, Any]:
        """``{key: accumulator}``, the accumulators as ``add`` makes them."""
        keys, acc, counts = self._held()
        if self.kind == "avg":
            pairs = zip(acc.tolist(), counts.tolist(), strict=True)
            return dict(zip(keys.tolist(), pairs, strict=True))
        return dict(zip(keys.tolist(), acc.tolist(), strict=True))

    @classmethod
    def from_arrays(cls, kind: str, keys: Any, acc: Any, counts: Any = None) -> ColumnWindow:
        """The window holding accumulators ``acc`` (and an average's ``counts``) of
        ``keys``, int64 without repeats in any order (a restore); it owns the arrays."""
        window = cls(kind)
        if not len(keys):
            return window
        low, high = int(keys.min()), int(keys.max())
        span = high - low + 1
        if not _dense_enough(span, len(keys)):
            order = np.argsort(keys)
            window.keys, window.acc = keys[order], acc[order]
            window.counts = counts[order] if kind == "avg" else None
            return window
        slots = keys - low
        window.low = low
        window.acc = window._empty(span, acc.dtype)
        window.acc[slots] = acc
        window.present = np.zeros(span, dtype=bool)
        window.present[slots] = True
        if kind == "avg":
            window.counts = np.zeros(span, dtype=np.int64)
            window.counts[slots] = counts
        return window


def timestamp_array(timestamps: Any) -> Any:
    """A batch's timestamps as an int64 array, or None when one is missing."""
    if isinstance(timestamps, np.ndarray):
        return timestamps if timestamps.dtype == np.int64 else timestamps.astype(np.int64)
    try:  # one pass (np.asarray looks at the list twice, and `None in` once more)
        return np.fromiter(timestamps, dtype=np.int64, count=len(timestamps))
    except TypeError:
        return None


@dataclass(frozen=True, slots=True)
class WindowPlacement:
    """The live windows a batch's records fall in: record ``rows[i]`` in the window that
    starts at ``starts[i]``; ``in_any[j]``: record ``j`` is in at least one."""

    starts: Any
    rows: Any
    in_any: Any
    slide: int
    reordered: bool  # a window's rows may not be ascending (records in several windows)

    def windows(self) -> Iterator[tuple[int, Any]]:
        """Each window's start and its records' rows, ascending (the records' order)."""
        starts, rows = self.starts, self.rows
        if not len(starts):
            return
        if bool((starts == starts[0]).all()):
            yield int(starts[0]), np.sort(rows) if self.reordered else rows
            return
        for start in _distinct(starts, self.slide):
            in_window = rows[starts == start]
            yield start, np.sort(in_window) if self.reordered else in_window

    def late_rows(self) -> list[int]:
        """The records in no live window: late."""
        if self.in_any.all():
            return []
        return np.flatnonzero(~self.in_any).tolist()  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class AscendingPlacement:
    """The live windows of a batch whose timestamps ascend: window ``starts[i]`` holds
    the records ``firsts[i]:ends[i]``, a run of the batch; the first ``late`` records
    are in no live window."""

    starts: Any
    firsts: Any
    ends: Any
    late: int

    def windows(self) -> Iterator[tuple[int, slice]]:
        """Each window's start and its records, as a slice of the batch."""
        for start, first, end in zip(
            self.starts.tolist(), self.firsts.tolist(), self.ends.tolist(), strict=True
        ):
            if first < end:
                yield start, slice(first, end)

    def late_rows(self) -> list[int]:
        return list(range(self.late))


def _last_start(ts: int, slide: int, offset: int) -> int:
    """The start of the latest window (of those ``slide`` apart from ``offset``) that
    holds ``ts``."""
    return ts - (ts - offset + slide) % slide


def _place_ascending(
    ts: Any, size: int, slide: int, offset: int, watermark: int
) -> AscendingPlacement | None:
    """``place_in_windows`` for ascending timestamps: each window's records are a run of
    the batch, found by binary search, and the late records a prefix of it. None when the
    batch spans too many windows for that to pay."""
    first_ts, last_ts = int(ts[0]), int(ts[-1])
    newest = _last_start(last_ts, slide, offset)
    latest_of_first = _last_start(first_ts, slide, offset)
    # The earliest window holding the first record: the latest one, less whole slides
    # while the window still reaches it (start > ts - size).
    earliest = latest_of_first - (latest_of_first - (first_ts - size + 1)) // slide * slide
    # The earliest live window: the first start past watermark - size + 1 (its end,
    # start + size - 1, is past the watermark).
    live = _last_start(watermark - size + 1 + slide, slide, offset)
    oldest = max(earliest, live)
    if (newest - oldest) // slide > len(ts) + 64:
        return None
    starts = np.arange(oldest, newest + 1, slide, dtype=np.int64)
    firsts = np.searchsorted(ts, starts, side="left")
    ends = np.searchsorted(ts, starts + size, side="left")
    late = int(np.searchsorted(ts, live, side="left")) if live > first_ts else 0
    return AscendingPlacement(starts, firsts, ends, late)


def place_in_windows(
    timestamps: Any, size: int, slide: int, offset: int, watermark: int
) -> WindowPlacement | AscendingPlacement:
    """Every window a record is in: the latest, then one slide earlier, while it holds the
    record's timestamp (``ts - size < start``); those whose end ``watermark`` reached are
    gone, and a record in no live window is late."""
    ts = timestamps
    if len(ts) and (len(ts) < 2 or bool((ts[1:] >= ts[:-1]).all())):
        placed = _place_ascending(ts, size, slide, offset, watermark)
        if placed is not None:
            return placed
    return place_each(ts, size, slide, offset, watermark)


def place_each(
    timestamps: Any, size: int, slide: int, offset: int, watermark: int
) -> WindowPlacement:
    """``place_in_windows`` for timestamps in any order: every record's windows computed
    one slide at a time over the whole batch."""
    ts = timestamps
    start = ts - (ts - offset + slide) % slide
    in_any = np.zeros(len(ts), dtype=bool)
    starts: list[Any] = []
    rows: list[Any] = []
    while True:
        holds = start > ts - size
        if not holds.any():
            break
        live = holds & (start + (size - 1) > watermark)
        in_any |= live
        live_rows = np.flatnonzero(live)
        starts.append(start[live_rows])
        rows.append(live_rows)
        start = start - slide
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return WindowPlacement(empty, empty, in_any, slide, reordered=False)
    if len(starts) == 1:
        return WindowPlacement(starts[0], rows[0], in_any, slide, reordered=False)
    return WindowPlacement(
        np.concatenate(starts), np.concatenate(rows), in_any, slide, reordered=True
    )


def extreme_at(ufunc: Any, acc: Any, slots: Any, values: Any) -> None:
    """``ufunc.at(acc, slots, values)`` for ``np.minimum`` or ``np.maximum``, keeping of
    two equal zeros the one that came first, as the built-ins' ``add`` does record after
    record (``v < acc``: 0.0 then -0.0 is 0.0). numpy keeps either, depending on the loop
    it runs. Only zeros are equal and apart, so only slots whose result is zero are
    looked at again, and only when the batch has a zero."""
    zero = values == 0 if acc.dtype.kind == "f" else None
    if zero is None or not zero.any():
        ufunc.at(acc, slots, values)
        return
    zero_slots, first = np.unique(slots[zero], return_index=True)
    first_zero = values[zero][first]
    held = acc[zero_slots]
    ufunc.at(acc, slots, values)
    ends_zero = acc[zero_slots] == 0
    at = zero_slots[ends_zero]
    kept = held[ends_zero]
    acc[at] = np.where(kept == 0, kept, first_zero[ends_zero])


def add_to_window(
    contents: ColumnWindow | dict[Any, Any] | None,
    kind: str,
    keys: Any,
    values: Any,
    *,
    span: tuple[int, int, int] | None = None,
    bounds: tuple[int, int] | None = None,
) -> ColumnWindow | dict[Any, Any]:
    """``contents`` (None: a new window) with records of ``keys`` and ``values`` (None
    for a count) added in their order, as the built-in ``kind``'s ``add`` does record
    after record. A window is held as columns while its keys are integers and its values
    numbers the arrays hold exactly; otherwise as a dict ``{key: accumulator}``.
    ``span``: a new window's expected keys; ``bounds``: the smallest and largest key of
    the batch ``keys`` come from (``ColumnWindow``)."""
    if contents is None:
        contents = ColumnWindow(kind, span)
    elif isinstance(contents, dict):  # restored, or filled by records: columns if it can
        contents = ColumnWindow.from_dict(kind, contents) or contents
    if isinstance(contents, ColumnWindow):
        if contents.add(keys, values, bounds):
            return contents
        contents = contents.as_dict()
    add_to_dict(kind, contents, keys, values)
    return contents


def _distinct(starts: Any, slide: int) -> list[int]:
    """The distinct window starts of ``starts`` (all one window offset apart by multiples
    of ``slide``), ascending: counted by window when they span few, else sorted."""
    low = int(starts.min())
    index = (starts - low) // slide
    if int(index.max()) < 1 << 12:
        return (np.flatnonzero(np.bincount(index)) * slide + low).tolist()  # type: ignore[no-any-return]
    return np.unique(starts).tolist()  # type: ignore[no-any-return]


def add_to_dict(kind: str, window: dict[Any, Any], keys: Any, values: Any) -> None:
    """Add records with ``keys`` and ``values`` to ``window`` (``{key: accumulator}``), one
    by one, as the built-in ``kind``'s ``add`` does."""
    get = window.get
    ks = keys.tolist()
    if kind == "count":
        for k in ks:
            window[k] = get(k, 0) + 1
        return
    vs = values.tolist()
    if kind == "sum":
        for k, v in zip(ks, vs, strict=True):
            window[k] = get(k, 0) + v
    elif kind == "min":
        for k, v in zip(ks, vs, strict=True):
            acc = get(k)
            window[k] = v if acc is None or v < acc else acc
    elif kind == "max":
        for k, v in zip(ks, vs, strict=True):
            acc = get(k)
            window[k] = v if acc is None or v > acc else acc
    else:  # avg: (sum, count)
        for k, v in zip(ks, vs, strict=True):
            total, count = get(k, (0, 0))
            window[k] = (total + v, count + 1)
