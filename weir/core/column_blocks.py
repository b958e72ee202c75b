"""Keyed window state as Arrow record batches: the block a checkpoint stores per key group
for windows a built-in aggregate holds as columns, and its encoding.

A block is one ``pyarrow.RecordBatch`` of the open windows of one state table in one key
group, a row per key and window:

======================  =======  ===================================================
column                  type     what
======================  =======  ===================================================
``key``                 int64    the key (integer keys only)
``window_start``        int64    the window's start, its namespace in the table
``acc``                 numeric  the accumulator: a count, a sum, a smallest or
                                 largest value, an average's sum
``count``               int64    an average's count (only for ``avg``)
======================  =======  ===================================================

The schema's metadata ``weir.kind`` names the built-in (``count``, ``sum``, ``min``,
``max``, ``avg``). Each row is exactly the entry ``{key: {window_start: accumulator}}``
the table holds in the dict form (``window_entries`` gives it: an ``avg`` accumulator is
the pair ``(acc, count)``, the others the value as a Python ``int`` or ``float``), so any
reader of the dict form reads a block. On the wire a block is an Arrow IPC stream
(``encode_block`` / ``decode_block``, read back without copying its buffers).

``split_by_key_group`` cuts a batch into the blocks of each key group, given each row's
key group (``weir.core.key_group_arrays``), with one sort and no Python per row.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from weir.core.key_group_arrays import KeyGroupTable, int_key_groups
from weir.core.key_groups import PyFlinkKeyHasher

__all__ = [
    "KIND_METADATA",
    "block_arrays",
    "blocks_by_key_group",
    "decode_block",
    "encode_block",
    "split_by_key_group",
    "window_batch",
    "window_entries",
]

KIND_METADATA = b"weir.kind"
KINDS = frozenset({"count", "sum", "min", "max", "avg"})


def window_batch(kind: str, keys: Any, starts: Any, acc: Any, counts: Any = None) -> pa.RecordBatch:
    """A block of rows ``(key, window_start, acc[, count])`` of built-in ``kind``; the
    arrays become the batch's buffers as they are (pass copies the caller will not
    change)."""
    columns = [_array(keys, np.int64), _array(starts, np.int64), _array(acc, None)]
    names = ["key", "window_start", "acc"]
    if kind == "avg":
        columns.append(_array(counts, np.int64))
        names.append("count")
    return pa.RecordBatch.from_arrays(columns, names=names, metadata={KIND_METADATA: kind})


def _array(values: Any, dtype: Any) -> pa.Array:
    """A numeric numpy array as an Arrow array over the same buffer (``pa.array`` would
    import pandas the first time, half a second in a task process)."""
    values = np.ascontiguousarray(values, dtype=dtype)
    arrow_type = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


_NUMPY_TYPES = {
    pa.from_numpy_dtype(np.dtype(name)): np.dtype(name)
    for name in (
        *("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
        *("float16", "float32", "float64"),
    )
}


def _numpy(array: pa.Array) -> Any:
    """A numeric Arrow array without nulls as a numpy view of its buffer (``to_numpy``
    would import pandas)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    dtype = _NUMPY_TYPES.get(array.type)
    if dtype is None or array.null_count:
        msg = f"a window state block column of type {array.type} with {array.null_count} nulls"
        raise ValueError(msg)
    data = np.frombuffer(array.buffers()[1], dtype=dtype, count=array.offset + len(array))
    return data[array.offset :]


def block_kind(batch: pa.RecordBatch) -> str:
    """The built-in a block holds accumulators of."""
    metadata = batch.schema.metadata or {}
    kind = metadata.get(KIND_METADATA, b"").decode()
    if kind not in KINDS:
        msg = f"a window state block without a known weir.kind ({kind!r}); schema {batch.schema}"
        raise ValueError(msg)
    return kind


def block_arrays(batch: pa.RecordBatch) -> tuple[str, Any, Any, Any, Any]:
    """``(kind, keys, window starts, accumulators, counts or None)`` of a block as numpy
    arrays (views of its buffers: read them, do not change them)."""
    kind = block_kind(batch)
    keys = _numpy(batch.column(0))
    starts = _numpy(batch.column(1))
    acc = _numpy(batch.column(2))
    counts = _numpy(batch.column(3)) if kind == "avg" else None
    return kind, keys, starts, acc, counts


def split_by_key_group(batch: pa.RecordBatch, groups: Any) -> dict[int, pa.RecordBatch]:
    """``batch`` cut into one block per key group, ``groups[i]`` the key group of row
    ``i``; a block's rows keep their order."""
    if not batch.num_rows:
        return {}
    # Key groups fit 16 bits (at most 32768 of them): numpy sorts them by radix.
    order = np.argsort(groups.astype(np.uint16), kind="stable")
    ordered = groups[order]
    cuts = np.flatnonzero(np.diff(ordered)) + 1
    bounds = np.concatenate(([0], cuts, [len(ordered)])).tolist()
    # numpy's take of each column rather than Arrow's: the columns are numbers without
    # nulls (``window_batch``), and pyarrow.compute costs a fifth of a second to import.
    sorted_batch = pa.RecordBatch.from_arrays(
        [_array(_numpy(column)[order], None) for column in batch.columns], schema=batch.schema
    )
    return {
        int(ordered[begin]): sorted_batch.slice(begin, end - begin)
        for begin, end in itertools.pairwise(bounds)
    }


def key_groups_of_block(
    batch: pa.RecordBatch, hasher: PyFlinkKeyHasher, max_parallelism: int
) -> Any:
    """The key group of each row's key, as ``hasher`` places it: with numpy for the key
    types ``weir.core.key_group_arrays`` computes, else key by key."""
    keys = _numpy(batch.column(0))
    groups = int_key_groups(keys, hasher.key_type, max_parallelism)
    if groups is None:
        key_group = hasher.key_group
        groups = np.fromiter(
            (key_group(k, max_parallelism) for k in keys.tolist()), np.int64, len(keys)
        )
    return groups


def blocks_by_key_group(
    blocks: Iterable[pa.RecordBatch],
    hasher: PyFlinkKeyHasher,
    max_parallelism: int,
    table: KeyGroupTable | None = None,
) -> dict[int, list[pa.RecordBatch]]:
    """``blocks`` cut into the blocks of each key group their keys are placed in;
    ``table``: the key groups of keys seen before, remembered (for the hasher's key
    type)."""
    by_group: dict[int, list[pa.RecordBatch]] = {}
    for batch in blocks:
        if table is not None:
            groups = table.of(_numpy(batch.column(0)))
        else:
            groups = key_groups_of_block(batch, hasher, max_parallelism)
        for group, block in split_by_key_group(batch, groups).items():
            by_group.setdefault(group, []).append(block)
    return by_group


def encode_block(batch: pa.RecordBatch) -> bytes:
    """A block as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()  # type: ignore[no-any-return]


def decode_block(data: bytes | memoryview) -> pa.RecordBatch:
    """The block ``encode_block`` wrote (its buffers point into ``data``)."""
    reader = pa.ipc.open_stream(pa.py_buffer(data))
    batches = list(reader)
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches, reader.schema).combine_chunks().to_batches()[0]


def window_entries(blocks: Iterable[pa.RecordBatch]) -> dict[Any, dict[Any, Any]]:
    """The dict form ``{key: {window_start: accumulator}}`` of ``blocks``."""
    entries: dict[Any, dict[Any, Any]] = {}
    for batch in blocks:
        kind, keys, starts, acc, counts = block_arrays(batch)
        values: Iterable[Any] = acc.tolist()
        if kind == "avg":
            values = zip(values, counts.tolist(), strict=True)
        for key, start, value in zip(keys.tolist(), starts.tolist(), values, strict=True):
            per = entries.get(key)
            if per is None:
                entries[key] = {start: value}
            else:
                per[start] = value
    return entries
