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
key group (``weir.core.key_group_arrays``), with no Python per row; ``blocks_by_key_group``
cuts many batches into one block per key group (and built-in). Both cut a few hundred
thousand rows at a time, each a sort by key group and a take that stay in the CPU's
cache, and join each group's pieces once: a take of millions of rows in one go gathers
from all over memory, three times slower.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from weir.core.key_group_arrays import KeyGroupTable, int_key_groups
from weir.core.key_groups import PyFlinkKeyHasher

__all__ = [
    "KIND_METADATA",
    "block_arrays",
    "block_stream",
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


# Rows cut at a time: a chunk's columns (a few megabytes) stay in the cache while they
# are sorted by key group and taken in that order.
CUT_ROWS = 1 << 17


class _KeyGroupPieces:
    """The rows of batches of one schema, gathered by key group a chunk at a time: each
    group's pieces in the order they came, joined into one block each by ``blocks``."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._pieces: dict[int, list[list[Any]]] = {}

    def add(self, columns: list[Any], groups: Any) -> None:
        """Rows ``columns`` (numpy arrays) whose key groups are ``groups``."""
        pieces = self._pieces
        total = len(groups)
        for low in range(0, total, CUT_ROWS):
            high = min(total, low + CUT_ROWS)
            # Key groups fit 16 bits (at most 32768 of them): numpy sorts them by radix.
            chunk_groups = groups[low:high].astype(np.uint16)
            order = np.argsort(chunk_groups, kind="stable")
            ordered = chunk_groups[order]
            cuts = (np.flatnonzero(np.diff(ordered)) + 1).tolist()
            bounds = [0, *cuts, high - low]
            taken = [column[low:high][order] for column in columns]
            for group, begin, end in zip(
                ordered[bounds[:-1]].tolist(), bounds[:-1], bounds[1:], strict=True
            ):
                pieces.setdefault(group, []).append([column[begin:end] for column in taken])

    def blocks(self) -> dict[int, pa.RecordBatch]:
        out = {}
        for group, pieces in self._pieces.items():
            columns = (
                pieces[0]
                if len(pieces) == 1
                else [np.concatenate([piece[i] for piece in pieces]) for i in range(len(pieces[0]))]
            )
            out[group] = pa.RecordBatch.from_arrays(
                [_array(column, None) for column in columns], schema=self.schema
            )
        return out


def split_by_key_group(batch: pa.RecordBatch, groups: Any) -> dict[int, pa.RecordBatch]:
    """``batch`` cut into one block per key group, ``groups[i]`` the key group of row
    ``i``; a block's rows keep their order."""
    pieces = _KeyGroupPieces(batch.schema)
    if batch.num_rows:
        pieces.add([_numpy(column) for column in batch.columns], groups)
    return pieces.blocks()


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
    """``blocks`` cut into one block per key group their keys are placed in, and per
    schema (built-in and accumulator type), rows in the order they came; ``table``: the
    key groups of keys seen before, remembered (for the hasher's key type)."""
    by_schema: dict[pa.Schema, _KeyGroupPieces] = {}
    for batch in blocks:
        if not batch.num_rows:
            continue
        keys = _numpy(batch.column(0))
        if table is not None:
            groups = table.of(keys)
        else:
            groups = key_groups_of_block(batch, hasher, max_parallelism)
        pieces = by_schema.get(batch.schema)
        if pieces is None:
            pieces = by_schema[batch.schema] = _KeyGroupPieces(batch.schema)
        pieces.add([_numpy(column) for column in batch.columns], groups)
    by_group: dict[int, list[pa.RecordBatch]] = {}
    for pieces in by_schema.values():
        for group, block in pieces.blocks().items():
            by_group.setdefault(group, []).append(block)
    return by_group


def block_stream(batch: pa.RecordBatch) -> pa.Buffer:
    """A block as an Arrow IPC stream, in Arrow's own buffer (not copied into bytes)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


def encode_block(batch: pa.RecordBatch) -> bytes:
    """A block as an Arrow IPC stream, as bytes."""
    return block_stream(batch).to_pybytes()  # type: ignore[no-any-return]


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
