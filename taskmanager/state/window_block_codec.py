"""One block of a built-in window aggregate's accumulators (all the keys of one key group
in one window) and its bytes: what the rocksdb backend stores as one value.

A block is either arrays (``BlockArrays``: the keys, int64 and ascending, and their
accumulators: a count, a sum, a smallest or largest value, an average's sum with its
count) or, for keys or values the arrays cannot hold exactly, a dict ``{key:
accumulator}``. ``accumulators`` gives either as the built-in's ``add`` makes them
(``int``, ``float``, ``(sum, count)``): what the canonical form of a snapshot holds key
by key, so that any backend and the per-record window path restore it.

The bytes: a tag byte, then for arrays a header (kind, the accumulators' dtype, the
number of keys) and the arrays' raw little-endian bytes one after another; for a dict,
its pickle. Everything that knows the layout is in this module.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass
from typing import Any

import cloudpickle
import numpy as np

_ARRAYS = b"A"
_DICT = b"D"
_HEADER = struct.Struct("<8s8sQ")  # kind, accumulator dtype, number of keys
_KEYS_DTYPE = np.dtype("<i8")
_COUNTS_DTYPE = np.dtype("<i8")
_PICKLE = 5


@dataclass(slots=True)
class BlockArrays:
    """The accumulators of built-in ``kind`` for ``keys`` (ascending, distinct):
    ``acc[i]`` is key ``keys[i]``'s count, sum, min or max, or an average's sum, whose
    count is ``counts[i]`` (None for the other kinds)."""

    kind: str
    keys: Any
    acc: Any
    counts: Any = None

    @property
    def nbytes(self) -> int:
        counts = 0 if self.counts is None else self.counts.nbytes
        return int(self.keys.nbytes + self.acc.nbytes + counts)

    def accumulators(self) -> dict[Any, Any]:
        """``{key: accumulator}`` as the built-in's ``add`` makes them."""
        keys = self.keys.tolist()
        if self.kind == "avg":
            pairs = zip(self.acc.tolist(), self.counts.tolist(), strict=True)
            return dict(zip(keys, pairs, strict=True))
        return dict(zip(keys, self.acc.tolist(), strict=True))


Block = BlockArrays | dict[Any, Any]


def accumulators(block: Block) -> dict[Any, Any]:
    """``{key: accumulator}`` of a block of either form."""
    return block.accumulators() if isinstance(block, BlockArrays) else block


def encode_block(block: Block) -> bytes:
    """The bytes of a block."""
    if not isinstance(block, BlockArrays):
        try:
            data = pickle.dumps(block, _PICKLE)
        except (pickle.PicklingError, TypeError, AttributeError):
            data = cloudpickle.dumps(block, protocol=_PICKLE)
        return _DICT + data
    acc = block.acc.astype(block.acc.dtype.newbyteorder("<"), copy=False)
    header = _HEADER.pack(block.kind.encode(), acc.dtype.str.encode(), len(block.keys))
    parts = [_ARRAYS, header, block.keys.astype(_KEYS_DTYPE, copy=False).tobytes(), acc.tobytes()]
    if block.counts is not None:
        parts.append(block.counts.astype(_COUNTS_DTYPE, copy=False).tobytes())
    return b"".join(parts)


def decode_block(raw: bytes, *, writable: bool = True) -> Block:
    """The block of ``encode_block``'s bytes; its arrays copied (``writable``) or views
    of ``raw`` (read once, as a snapshot does)."""
    view = memoryview(raw)
    if view[:1] == _DICT:
        return pickle.loads(view[1:])  # type: ignore[no-any-return]
    kind, acc_dtype, n = _HEADER.unpack_from(view, 1)
    dtype = np.dtype(acc_dtype.rstrip(b"\x00").decode())
    at = 1 + _HEADER.size
    keys = np.frombuffer(view, _KEYS_DTYPE, n, at)
    at += keys.nbytes
    acc = np.frombuffer(view, dtype, n, at)
    at += acc.nbytes
    name = kind.rstrip(b"\x00").decode()
    counts = np.frombuffer(view, _COUNTS_DTYPE, n, at) if name == "avg" else None
    native = dtype.newbyteorder("=")
    if writable:
        keys = keys.astype(np.int64)
        acc = acc.astype(native)
        counts = None if counts is None else counts.astype(np.int64)
    return BlockArrays(name, keys, acc, counts)
