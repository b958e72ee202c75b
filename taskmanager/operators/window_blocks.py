"""The aligned windows of a built-in aggregate on the ``rocksdb`` backend (event time
without allowed lateness, or processing time), kept in RocksDB in columnar blocks: one
value per key group and window, not one per key, so that a million keys cost a few
hundred RocksDB values (``BlockWindowIndex``).

A block (``weir.taskmanager.state.window_block_codec``) holds one key group's keys in
one window, ascending, with their accumulators as arrays. A batch of columns is added
with numpy: the batch's windows placed at once (``place_in_windows``); per window, its
distinct keys found and counted once (``np.unique``) and their key groups computed
over the array with the per-key path's hash (``weir.core.key_group_arrays``); then
each block the batch touches is merged with its part of the batch: the keys it lacks
inserted in order, the accumulators updated (``+=`` of the counts, ``np.add.at``,
``np.minimum.at``, ``np.maximum.at`` in record order, so a float sum, and which of two
equal zeros a Min or Max keeps (``extreme_at``), are what the built-in's ``add`` makes
record after record). A window fires, once the watermark
reached its end, by reading its blocks and emitting their results as one column.

Blocks are read from RocksDB, changed and written back through a write-back cache of
the blocks used last (``_CACHE_BYTES``); ``snapshot`` writes every changed block
before a checkpoint or savepoint is taken, so RocksDB holds everything then: an
incremental checkpoint carries the blocks as they are, a full one and a savepoint hold
them key by key (``weir.taskmanager.state.rocksdb_blocks``), as the per-key path does.
A restore from the canonical form finds the windows key by key in the contents table
and makes blocks of them here.

What arrays cannot hold exactly as the built-in's ``add`` makes it (keys that are no
integers, an integer sum that could pass 64 bits, NaN for min or max, integers then
floats in one window) is kept in that block as a dict ``{key: accumulator}``, added
to record by record; a batch of records (not columns) is added record by record too.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
from rocksdict import WriteBatch

from weir.core.columnar import ColumnBatch, batch_column, key_column
from weir.core.key_group_arrays import KeyGroupTable, vectorised_key_type
from weir.taskmanager.operators.window_columns import (
    add_to_dict,
    average_column,
    extreme_at,
    place_in_windows,
    timestamp_array,
)
from weir.taskmanager.operators.window_state import CONTENTS, MISSING
from weir.taskmanager.state.backend import KeyedStateBackend, NamespacedTable
from weir.taskmanager.state.rocksdb import RocksDBKeyedStateBackend
from weir.taskmanager.state.rocksdb_blocks import block_key, blocks_table, parse_block_key
from weir.taskmanager.state.window_block_codec import (
    Block,
    BlockArrays,
    accumulators,
    decode_block,
    encode_block,
)

if TYPE_CHECKING:
    from weir.taskmanager.operators.base import Timestamps
    from weir.taskmanager.operators.window_index import AlignedWindows, Columns, Late

# The blocks kept decoded in memory, changed or not: the blocks of the windows a stream
# fills at once (1 M keys in two open windows are ~32 MB of keys and counts) stay, so a
# batch reads and writes RocksDB only for blocks it has not touched lately; as much as
# RocksDB's own block cache of one backend.
_CACHE_BYTES = 64 << 20
# What a dict block costs per key besides its values, for the cache's estimate.
_DICT_ENTRY_BYTES = 100
# Records of columns wait until this many are pending (or a window fires, or a snapshot
# is taken), then are merged into their blocks at once: a block then gets tens of
# thousands of records a merge, not a few hundred a batch, and what a merge costs
# whatever its size (a pass over the key range, a call per block) is paid per 4 M
# records (32 MB of keys waiting; measured on 1 M keys, 1.4x the rate of 1 M records a
# merge, 2x that of 256 k).
_PENDING_EVENTS = 1 << 22
_NUMERIC = "biuf"
# Counts over a range of keys while the range is at most this many times the keys (or
# 65,536 wide).
_DENSE_SLACK = 4
_I64_LIMIT = 1 << 63


def block_index_supported(backend: KeyedStateBackend, columns: Columns | None) -> bool:
    """Whether the windows of a built-in aggregate over ``columns`` are kept in blocks
    on ``backend`` (the rocksdb backend, keys of a type placed as arrays)."""
    return (
        columns is not None
        and isinstance(backend, RocksDBKeyedStateBackend)
        and vectorised_key_type(backend.key_hasher.key_type)
    )


class FiredBlocks:
    """A fired window's blocks, read out as the window operator reads a ``ColumnWindow``."""

    __slots__ = ("_blocks", "_get_result", "_kind")

    def __init__(self, kind: str, blocks: list[Block], get_result: Callable[[Any], Any]) -> None:
        self._kind = kind
        self._blocks = blocks
        self._get_result = get_result

    def result_column(self) -> Any:
        """The results, one per key, as one array; None when a block is a dict or only
        Python's arithmetic gives them exactly (an average of integers past 2**53)."""
        arrays = [b for b in self._blocks if isinstance(b, BlockArrays)]
        if len(arrays) != len(self._blocks):
            return None
        if not arrays:
            return np.zeros(0, dtype=np.int64)
        acc = np.concatenate([b.acc for b in arrays])
        if self._kind != "avg":
            return acc
        return average_column(acc, np.concatenate([b.counts for b in arrays]))

    def results(self) -> list[Any]:
        column = self.result_column()
        if column is not None:
            return column.tolist()  # type: ignore[no-any-return]
        get_result = self._get_result
        return [get_result(acc) for acc in self.as_dict().values()]

    def as_dict(self) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for block in self._blocks:
            out.update(accumulators(block))
        return out

    def __len__(self) -> int:
        return sum(len(b.keys) if isinstance(b, BlockArrays) else len(b) for b in self._blocks)


class BlockWindowIndex:
    """Aligned windows of a built-in aggregate (event time without allowed lateness, or
    processing time: records at the time they are handled, fired by the clock), in
    blocks in RocksDB (see the module docstring); the same calls as
    ``AlignedWindowIndex``, on the task thread."""

    def __init__(
        self,
        windows: AlignedWindows,
        backend: RocksDBKeyedStateBackend,
        table: NamespacedTable,
        *,
        key: Callable[[Any], Any],
        aggregate: Any,
        columns: Columns,
        missing_timestamp: Callable[[], Exception],
    ) -> None:
        """``table``: the operator's contents table, key by key (what a restore from the
        canonical form fills: taken out of it here). ``aggregate``: the built-in, whose
        ``add`` makes what a dict block holds; ``columns``: ``(kind, value field, key
        field)``."""
        self._size = windows.size
        self._slide = windows.slide
        self._offset = windows.offset
        self._backend = backend
        self._key = key
        self._aggregate = aggregate
        self._kind, self._value_field, self._key_field = columns
        self._missing_timestamp = missing_timestamp
        self._max_parallelism = backend.max_parallelism
        self._key_type = backend.key_hasher.key_type
        self._owned = backend.key_group_range
        self._db = backend.db
        self._cf, self._handle = backend.get_block_table(blocks_table(CONTENTS))
        self._write_options = backend.write_options
        self._key_groups = KeyGroupTable(self._max_parallelism, self._key_type)
        self._cache: OrderedDict[tuple[int, int], Block] = OrderedDict()
        self._cache_bytes = 0
        self._dirty: set[tuple[int, int]] = set()
        self._stored: set[tuple[int, int]] = set()  # blocks RocksDB holds
        self._groups: dict[int, set[int]] = {}  # window start -> key groups with a block
        # Records of columns not merged into their blocks yet, by window start.
        self._pending: dict[int, list[tuple[Any, Any]]] = {}
        self._pending_events = 0
        it = self._cf.iter()
        it.seek_to_first()
        while it.valid():
            group, start = parse_block_key(it.key())
            self._stored.add((start, group))
            self._groups.setdefault(start, set()).add(group)
            it.next()
        del it
        self._starts = list(self._groups)  # a heap of the windows' starts
        heapq.heapify(self._starts)
        self._take_restored(table)

    columnar = True

    def _take_restored(self, table: NamespacedTable) -> None:
        """Windows restored key by key (the canonical form) into blocks."""
        if table.is_empty():
            return
        by_window: dict[int, dict[Any, Any]] = {}
        for k, start, acc in table.entries():
            contents = by_window.get(start)
            if contents is None:
                contents = by_window[start] = {}
            contents[k] = acc
        table.clear_all()
        key_group_of = self._backend.key_group_of
        for start, contents in by_window.items():
            keys = list(contents)
            by_block: dict[int, dict[Any, Any]] = {}
            if all(type(k) is int and -_I64_LIMIT <= k < _I64_LIMIT for k in keys):
                groups = self._key_groups.of(np.asarray(keys, dtype=np.int64)).tolist()
            else:
                groups = [key_group_of(k) for k in keys]
            for k, group in zip(keys, groups, strict=True):
                block_contents = by_block.get(group)
                if block_contents is None:
                    block_contents = by_block[group] = {}
                block_contents[k] = contents[k]
            for group, restored in by_block.items():
                block = self._block(start, group)
                merged = accumulators(block) if block is not None else {}
                merged.update(restored)
                self._put(start, group, _arrays_of(self._kind, merged) or merged)
        self._evict()

    # --- the cache ------------------------------------------------------------------

    def _block(self, start: int, group: int) -> Block | None:
        """The block of ``group`` in window ``start``, or None when there is none."""
        at = (start, group)
        block = self._cache.get(at)
        if block is not None:
            self._cache.move_to_end(at)
            return block
        if at not in self._stored:
            return None
        raw = self._cf.get(block_key(group, start))
        assert raw is not None, "a block recorded as stored is in RocksDB"
        block = decode_block(raw)
        self._cache[at] = block
        self._cache_bytes += _size(block)
        return block

    def _put(self, start: int, group: int, block: Block) -> None:
        """``block`` is the block of ``group`` in window ``start`` now (changed)."""
        at = (start, group)
        old = self._cache.get(at)
        if old is None:
            if start not in self._groups:
                self._groups[start] = set()
                heapq.heappush(self._starts, start)
            self._groups[start].add(group)
        else:
            self._cache_bytes -= _size(old)
        self._cache[at] = block
        self._cache.move_to_end(at)
        self._cache_bytes += _size(block)
        self._dirty.add(at)

    def _evict(self) -> None:
        """Write back and drop the blocks used longest ago until the cache holds three
        quarters of ``_CACHE_BYTES``."""
        if self._cache_bytes <= _CACHE_BYTES:
            return
        batch = WriteBatch(raw_mode=True)
        cache = self._cache
        while cache and self._cache_bytes > _CACHE_BYTES * 3 // 4:
            (start, group), block = cache.popitem(last=False)
            self._cache_bytes -= _size(block)
            if (start, group) in self._dirty:
                self._dirty.discard((start, group))
                batch.put(block_key(group, start), encode_block(block), self._handle)
                self._stored.add((start, group))
        if batch.len():
            self._db.write(batch, self._write_options)

    def snapshot(self) -> None:
        """Write every changed block to RocksDB (before a snapshot is taken)."""
        if self._pending:
            self._merge_pending()
        if not self._dirty:
            return
        batch = WriteBatch(raw_mode=True)
        for start, group in self._dirty:
            block = self._cache[(start, group)]
            batch.put(block_key(group, start), encode_block(block), self._handle)
            self._stored.add((start, group))
        self._db.write(batch, self._write_options)
        self._dirty.clear()

    # --- adding -----------------------------------------------------------------------

    def add_columns(
        self, batch: ColumnBatch, timestamps: Timestamps, watermark: int
    ) -> Late | None:
        """A batch of columns added to its windows' blocks; returns the late records
        (None when the batch lacks the columns: it then goes as records)."""
        kind = self._kind
        keys = key_column(batch, self._key_field)
        values = None
        if kind != "count":
            values = (
                next(iter(batch.columns.values()))
                if self._value_field is None and batch.spec.is_scalar
                else batch_column(batch, self._value_field)
            )
            if values is None:
                return None
        if keys is None or keys.dtype.kind not in "iu":
            return None
        if keys.dtype != np.int64:
            if keys.dtype.kind == "u" and len(keys) and int(keys.max()) >= _I64_LIMIT:
                return None
            keys = keys.astype(np.int64)
        stamps = timestamp_array(timestamps)
        if stamps is None:
            raise self._missing_timestamp()
        placed = place_in_windows(stamps, self._size, self._slide, self._offset, watermark)
        for start, rows in placed.windows():
            self._add_to_window(start, keys[rows], None if values is None else values[rows])
        self._evict()
        late = placed.late_rows()
        if not late:
            return [], []
        records = batch.records()
        return [records[i] for i in late], [int(stamps[i]) for i in late]

    def _add_to_window(self, start: int, keys: Any, values: Any) -> None:
        """Records of window ``start``: pending until ``_PENDING_EVENTS`` of them wait,
        then merged into the blocks at once (a block's part of a batch of 65,536 events
        is a few hundred: per block, the numpy calls would cost more than their work)."""
        pending = self._pending.get(start)
        if pending is None:
            pending = self._pending[start] = []
        pending.append((keys, values))
        self._pending_events += len(keys)
        if self._pending_events >= _PENDING_EVENTS:
            self._merge_pending()

    def _merge_pending(self) -> None:
        """Merge every window's pending records into its blocks, in record order."""
        pending, self._pending = self._pending, {}
        self._pending_events = 0
        for start, parts in pending.items():
            keys = np.concatenate([k for k, _ in parts]) if len(parts) > 1 else parts[0][0]
            values = None
            if parts[0][1] is not None:
                values = np.concatenate([v for _, v in parts]) if len(parts) > 1 else parts[0][1]
            self._merge_window(start, keys, values)
        self._evict()

    def _merge_window(self, start: int, keys: Any, values: Any) -> None:
        counts = None
        if self._kind == "count":  # the distinct keys, ascending, and their records
            keys, counts = _count_keys(keys)
        groups = self._key_groups.of(keys)
        owned = self._owned
        if len(groups) and (int(groups.min()) < owned.start or int(groups.max()) >= owned.stop):
            msg = (
                f"keys of key groups outside this subtask's {owned} reached its window "
                "operator; they were sent to the wrong subtask"
            )
            raise RuntimeError(msg)
        # A stable sort of small integers is a radix sort: each block's records (or keys)
        # in their order.
        small = np.uint8 if self._max_parallelism <= 1 << 8 else np.uint16
        order = np.argsort(groups.astype(small, copy=False), kind="stable")
        counted = np.bincount(groups, minlength=self._max_parallelism)
        present = np.flatnonzero(counted).tolist()
        ends = np.cumsum(counted).tolist()
        sizes = counted.tolist()
        keys = keys[order]
        if values is not None:
            values = values[order]
        if counts is not None:
            counts = counts[order]
        kind = self._kind
        for group in present:
            b = ends[group]
            a = b - sizes[group]
            block = self._block(start, group)
            if counts is not None:
                merged = _merge_counts(block, keys[a:b], counts[a:b])
            else:
                merged = _merge(kind, block, keys[a:b], values[a:b])
            self._put(start, group, merged)

    def add(self, batch: list[Any], timestamps: Any, watermark: int) -> Late:
        """Records (not columns) added one by one, as ``AlignedWindowIndex.add`` does,
        into their blocks held as dicts."""
        if self._pending:
            self._merge_pending()
        size, slide, offset = self._size, self._slide, self._offset
        key, key_group_of = self._key, self._backend.key_group_of
        create, agg_add = self._aggregate.create_accumulator, self._aggregate.add
        late: list[Any] = []
        late_ts: list[int | None] = []
        touched: dict[tuple[int, int], dict[Any, Any]] = {}
        for x, ts in zip(batch, timestamps, strict=True):
            if ts is None:
                raise self._missing_timestamp()
            last_start = ts - (ts - offset + slide) % slide
            k = key(x)
            group = -1
            skipped = True
            for start in range(last_start, ts - size, -slide):
                if start + size - 1 <= watermark:
                    continue
                skipped = False
                if group < 0:
                    group = key_group_of(k)
                contents = touched.get((start, group))
                if contents is None:
                    block = self._block(start, group)
                    contents = {} if block is None else dict(accumulators(block))
                    touched[(start, group)] = contents
                acc = contents.get(k, MISSING)
                contents[k] = agg_add(x, create() if acc is MISSING else acc)
            if skipped and ts <= watermark:
                late.append(x)
                late_ts.append(ts)
        for (start, group), contents in touched.items():
            self._put(start, group, _arrays_of(self._kind, contents) or contents)
        self._evict()
        return late, late_ts

    # --- firing -----------------------------------------------------------------------

    def earliest_start(self) -> int | None:
        """The start of the earliest window held, pending records' too (None: none)."""
        starts = [self._starts[0]] if self._starts else []
        if self._pending:
            starts.append(min(self._pending))
        return min(starts) if starts else None

    def fire(self, watermark: int) -> Iterator[tuple[int, FiredBlocks]]:
        """Pop every window whose end ``watermark`` reached, earliest first: its start and
        its blocks (deleted from RocksDB)."""
        starts, size = self._starts, self._size
        if self._pending and min(self._pending) + size - 1 <= watermark:
            self._merge_pending()
        while starts and starts[0] + size - 1 <= watermark:
            start = heapq.heappop(starts)
            groups = sorted(self._groups.pop(start, ()))
            blocks: list[Block] = []
            batch = WriteBatch(raw_mode=True)
            for group in groups:
                block = self._block(start, group)
                at = (start, group)
                if block is not None:
                    blocks.append(block)
                    self._cache_bytes -= _size(self._cache.pop(at))
                self._dirty.discard(at)
                if at in self._stored:
                    self._stored.discard(at)
                    batch.delete(block_key(group, start), self._handle)
            if batch.len():
                self._db.write(batch, self._write_options)
            yield start, FiredBlocks(self._kind, blocks, self._aggregate.get_result)


# --- blocks as arrays ---------------------------------------------------------------------


def _size(block: Block) -> int:
    if isinstance(block, BlockArrays):
        return block.nbytes
    return len(block) * _DICT_ENTRY_BYTES


def _acc_dtype(kind: str, values: Any) -> Any:
    if kind == "count":
        return np.dtype(np.int64)
    if kind in ("min", "max"):
        return values.dtype
    return np.dtype(np.float64) if values.dtype.kind == "f" else np.dtype(np.int64)


def _empty(kind: str, n: int, dtype: Any) -> Any:
    """Accumulators of ``n`` keys not seen yet: what the first value is added to (min and
    max start at the largest and smallest value of the type)."""
    if kind == "min":
        return np.full(n, np.inf if dtype.kind == "f" else np.iinfo(dtype).max, dtype=dtype)
    if kind == "max":
        return np.full(n, -np.inf if dtype.kind == "f" else np.iinfo(dtype).min, dtype=dtype)
    return np.zeros(n, dtype=dtype)


def _holds_exactly(kind: str, block: BlockArrays | None, values: Any) -> bool:
    """Whether arrays hold what ``add`` makes of ``values`` added to ``block``."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in _NUMERIC:
        return False
    if kind in ("min", "max"):
        if values.dtype.kind not in "iuf":
            return False
        if values.dtype.kind == "f" and np.isnan(values).any():
            return False  # Python's comparisons with NaN are not numpy's min/max
    dtype = _acc_dtype(kind, values)
    if block is not None and len(block.keys) and block.acc.dtype != dtype:
        return False
    if kind in ("sum", "avg") and dtype.kind == "i" and len(values):
        # Python's ints do not wrap: the sum must stay within 64 bits.
        largest = max(abs(int(values.min())), abs(int(values.max())))
        held = 0
        if block is not None and len(block.acc):
            held = max(abs(int(block.acc.min())), abs(int(block.acc.max())))
        if held + largest * len(values) >= _I64_LIMIT:
            return False
    return True


def _count_keys(keys: Any) -> tuple[Any, Any]:
    """The distinct ``keys``, ascending, and how many times each is there: counted over
    their range while it is not much wider than they are many (no sort), else sorted."""
    if not len(keys):
        return keys, keys
    low, high = int(keys.min()), int(keys.max())
    if high - low < max(_DENSE_SLACK * len(keys), 1 << 16):
        counts = np.bincount(keys - low)
        present = np.flatnonzero(counts)
        return present + low, counts[present]
    return np.unique(keys, return_counts=True)  # type: ignore[no-any-return]


def _merge_counts(block: Block | None, keys: Any, counts: Any) -> Block:
    """``block`` (None: new) with ``counts`` more records of ``keys`` (distinct,
    ascending: each found where the last one was, a short binary search)."""
    if isinstance(block, dict):
        get = block.get
        for k, c in zip(keys.tolist(), counts.tolist(), strict=True):
            block[k] = get(k, 0) + c
        return block
    if block is None or not len(block.keys):
        return BlockArrays("count", keys.copy(), counts.astype(np.int64))
    held = block.keys
    n = len(held)
    slots = np.searchsorted(held, keys)
    found = held[np.minimum(slots, n - 1)] == keys
    if not found.all():  # keys new to the block, inserted in order
        new = ~found
        block.keys = np.insert(held, slots[new], keys[new])
        block.acc = np.insert(block.acc, slots[new], 0)
        slots = slots + np.cumsum(new) - new
    block.acc[slots] += counts
    return block


def _merge(kind: str, block: Block | None, keys: Any, values: Any) -> Block:
    """``block`` (None: new) with records of ``keys`` (and ``values``, None for a count)
    added in their order."""
    if isinstance(block, dict) or (kind != "count" and not _holds_exactly(kind, block, values)):
        contents = {} if block is None else dict(accumulators(block))
        add_to_dict(kind, contents, keys, values)
        return contents
    dtype = _acc_dtype(kind, values)
    if block is None or not len(block.keys):
        block = BlockArrays(
            kind,
            np.zeros(0, dtype=np.int64),
            _empty(kind, 0, dtype),
            np.zeros(0, dtype=np.int64) if kind == "avg" else None,
        )
    held = block.keys
    n = len(held)
    slots = np.searchsorted(held, keys)
    if n:
        found = held[np.minimum(slots, n - 1)] == keys
    else:
        found = np.zeros(len(keys), dtype=bool)
    if not found.all():  # keys new to the block: inserted in order, then found again
        new = np.unique(keys[~found])
        where = np.searchsorted(held, new)
        block.keys = np.insert(held, where, new)
        block.acc = np.insert(block.acc, where, _empty(kind, len(new), block.acc.dtype))
        if block.counts is not None:
            block.counts = np.insert(block.counts, where, 0)
        slots = np.searchsorted(block.keys, keys)
    if kind == "count":
        block.acc += np.bincount(slots, minlength=len(block.keys))
        return block
    if values.dtype != block.acc.dtype and block.acc.dtype.kind == "i":
        values = values.astype(block.acc.dtype)  # bools or unsigned, within range
    if kind == "sum":
        np.add.at(block.acc, slots, values)
    elif kind == "avg":
        np.add.at(block.acc, slots, values)
        block.counts += np.bincount(slots, minlength=len(block.keys))
    elif kind == "min":
        extreme_at(np.minimum, block.acc, slots, values)
    else:
        extreme_at(np.maximum, block.acc, slots, values)
    return block


def _arrays_of(kind: str, contents: dict[Any, Any]) -> BlockArrays | None:
    """``contents`` (``{key: accumulator}``) as arrays, or None when its keys are not
    integers or its accumulators not numbers of one type the arrays hold exactly."""
    if not contents:
        return None
    keys = list(contents)
    if any(type(k) is not int for k in keys):
        return None
    try:
        key_array = np.asarray(keys, dtype=np.int64)
    except OverflowError:
        return None
    values = list(contents.values())
    counts = None
    if kind == "avg":
        if any(type(v) is not tuple for v in values):
            return None
        counts = np.asarray([v[1] for v in values], dtype=np.int64)
        values = [v[0] for v in values]
    types = {type(v) for v in values}
    if len(types) != 1 or types.pop() not in (int, float):
        return None
    try:
        acc = np.asarray(values)
    except OverflowError:
        return None
    if acc.dtype.kind not in "if" or (kind == "count" and acc.dtype.kind != "i"):
        return None
    if kind in ("min", "max") and acc.dtype.kind == "f" and np.isnan(acc).any():
        return None
    order = np.argsort(key_array)
    return BlockArrays(
        kind, key_array[order], acc[order], None if counts is None else counts[order]
    )
