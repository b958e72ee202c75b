"""Key groups of an array of integer keys at once: what ``PyFlinkKeyHasher.key_group`` gives
each key, computed with numpy.

Flink places a key by ``murmurHash(Row.of(key).hashCode()) % max_parallelism``; the
per-key rules are in ``weir.core.key_groups``. Here the same arithmetic runs over int64
arrays, modulo 2**32 in ``uint32``/``int64`` lanes:

- ``Integer``, ``Short``, ``Byte``: the hashCode is the value's low 32 bits;
- ``Long``: ``(int) (value ^ (value >>> 32))``;
- ``pickled`` (``key_by`` without a key type): ``Arrays.hashCode`` of the bytes of
  ``pickle.dumps(key, protocol=5)``. An int pickles in one of a few layouts, chosen by
  its magnitude (``K`` one unsigned byte, ``M`` two, ``J`` four signed, ``LONG1`` five to
  eight, the last ones inside a protocol-4 frame): within a layout only the value's
  little-endian bytes change, so the hash is the layout's hash with those bytes zero plus
  each byte (signed, as Java's are) times its power of 31. The layouts are read off
  ``pickle.dumps`` itself when this module loads, not written out by hand.

Other key types have no array form here (``int_key_groups`` returns None).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np

from weir.core.key_groups import java_bytes_hash, normalized_key_type

__all__ = ["KeyGroupTable", "int_key_groups", "vectorised_key_type"]

_M32 = 0xFFFFFFFF
_ROW_OF_ONE_FIELD = 62  # as weir.core.key_groups: Row.of(key).hashCode() - key.hashCode()
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _pickle_layout(representative: int, width: int) -> tuple[int, list[int]]:
    """``(hash of the layout with its value bytes zero, multiplier of each value byte)``
    of the ints that pickle like ``representative``, whose value is the last ``width``
    bytes before the STOP opcode."""
    data = bytearray(pickle.dumps(representative, protocol=5))
    n = len(data)
    first = n - 1 - width
    data[first : n - 1] = bytes(width)
    base = java_bytes_hash(bytes(data)) & _M32
    # Arrays.hashCode: byte i of n counts 31 ** (n - 1 - i).
    return base, [pow(31, n - 1 - (first + i), 1 << 32) for i in range(width)]


# (lowest, highest, value bytes) of each layout, and the ranges that share one.
_RANGES: list[tuple[int, int, int]] = [
    (0, 255, 1),  # BININT1
    (256, 65535, 2),  # BININT2
    (-(1 << 31), -1, 4),  # BININT
    (65536, (1 << 31) - 1, 4),
]
for _width in range(5, 9):  # LONG1 of 5..8 bytes, two's complement, shortest form
    _low_neg, _high_neg = -(1 << (8 * _width - 1)), -(1 << (8 * (_width - 1) - 1)) - 1
    _low_pos, _high_pos = 1 << (8 * (_width - 1) - 1), (1 << (8 * _width - 1)) - 1
    _RANGES += [(_low_neg, _high_neg, _width), (_low_pos, _high_pos, _width)]
_LAYOUTS = [(low, high, width, *_pickle_layout(low, width)) for low, high, width in _RANGES]

_VECTORISED = frozenset({"pickled", "Integer", "Short", "Byte", "Long"})


def vectorised_key_type(key_type: str) -> bool:
    """Whether ``int_key_groups`` computes the key groups of integer keys of ``key_type``."""
    return normalized_key_type(key_type) in _VECTORISED


_LOWS = np.array(sorted(low for low, _, _, _, _ in _LAYOUTS), dtype=np.int64)
_BY_LOW = sorted(_LAYOUTS)
# Per layout: its base hash, and for each value byte what each of its 256 values adds
# (the byte as Java's signed byte, times its power of 31, modulo 2**32).
_SIGNED = np.arange(256, dtype=np.int64) - (np.arange(256) >= 128) * 256
_TABLES = [
    (
        np.uint32(base),
        [((_SIGNED * multiplier) & _M32).astype(np.uint32) for multiplier in multipliers],
    )
    for _, _, _, base, multipliers in _BY_LOW
]


def _layout_codes(raw: Any, layout: int) -> Any:
    """The hashes of the keys whose little-endian bytes are ``raw`` (rows of 8), all
    pickled in ``layout``: its base plus a table lookup per value byte, in uint32."""
    base, tables = _TABLES[layout]
    codes = tables[0][raw[:, 0]]
    for b in range(1, len(tables)):
        codes += tables[b][raw[:, b]]
    codes += base
    return codes


def _pickled_codes(keys: Any) -> Any:
    """``Arrays.hashCode(pickle.dumps(k, 5))`` of each int64 key, as uint32."""
    raw = keys.astype("<i8", copy=False).view(np.uint8).reshape(-1, 8)
    # The layout of each key: the last one whose lowest value it reaches (one pass).
    layout = np.searchsorted(_LOWS, keys, side="right") - 1
    counts = np.bincount(layout, minlength=len(_LOWS))
    present = np.flatnonzero(counts).tolist()
    # The layout most keys have, over all rows at once; the others' rows written over.
    major = max(present, key=lambda i: counts[i])
    codes = _layout_codes(raw, major)
    for i in present:
        if i != major:
            rows = np.flatnonzero(layout == i)
            codes[rows] = _layout_codes(raw[rows], i)
    return codes


def _murmur(code: Any) -> Any:
    """Flink's ``MathUtils.murmurHash`` of each uint32 code: non-negative, as int64."""
    c1, c2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)
    h = code * c1
    h = (h << np.uint32(15)) | (h >> np.uint32(17))
    h = h * c2
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    h = h * np.uint32(5) + np.uint32(0xE6546B64)
    h ^= np.uint32(4)
    h ^= h >> np.uint32(16)
    h = h * np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h = h * np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    signed = h.view(np.int32).astype(np.int64)
    out = np.abs(signed)
    out[out == 1 << 31] = 0  # Math.abs(Integer.MIN_VALUE) stays negative: Flink takes 0
    return out


def int_key_groups(keys: Any, key_type: str, max_parallelism: int) -> Any | None:
    """The key group of each key of the int64 array ``keys`` (an int64 array), equal to
    ``PyFlinkKeyHasher(key_type).key_group(int(k), max_parallelism)`` for every key; None
    when ``key_type`` has no array form here."""
    kind = normalized_key_type(key_type)
    if kind not in _VECTORISED:
        return None
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    if not len(keys):
        return np.zeros(0, dtype=np.int64)
    if kind == "pickled":
        codes = _pickled_codes(keys)
    elif kind == "Long":
        bits = keys.view(np.uint64)
        codes = ((bits ^ (bits >> np.uint64(32))) & np.uint64(_M32)).astype(np.uint32)
    else:  # Integer, Short, Byte: the low 32 bits
        codes = (keys & _M32).astype(np.uint32)
    codes = codes + np.uint32(_ROW_OF_ONE_FIELD)
    return _murmur(codes) % max_parallelism


# A remembered range is at most this many times wider than the keys looked up in it (or
# 65,536 wide), and never wider than _TABLE_MAX keys.
_TABLE_SLACK = 4
_TABLE_MAX = 1 << 26


class KeyGroupTable:
    """Key groups of arrays of integer keys (of a key type ``int_key_groups`` takes),
    remembered over the range of keys seen while it is not much wider than the keys are
    many (a stream's keys are the same ones window after window, checkpoint after
    checkpoint: each is hashed once)."""

    __slots__ = ("_key_type", "_low", "_max_parallelism", "_table")

    def __init__(self, max_parallelism: int, key_type: str) -> None:
        self._max_parallelism = max_parallelism
        self._key_type = key_type
        self._low = 0
        self._table: Any = None  # key group of key low + i

    def of(self, keys: Any) -> Any:
        if not len(keys):
            return np.zeros(0, dtype=np.int64)
        low, high = int(keys.min()), int(keys.max())
        table, old_low = self._table, self._low
        if table is not None:
            old_high = old_low + len(table) - 1
            if low >= old_low and high <= old_high:
                return table[keys - old_low]
            # Grown by at least half its width at once: keys that climb (new ids) hash
            # each new key once, not the whole range again at every batch.
            grow = len(table) // 2
            low = min(low, old_low - grow if low < old_low else old_low)
            high = max(high, old_high + grow if high > old_high else old_high)
        width = high - low + 1
        if width > max(
            _TABLE_SLACK * len(keys), 1 << 16, 0 if table is None else 2 * len(table)
        ) or (width > _TABLE_MAX):
            return int_key_groups(keys, self._key_type, self._max_parallelism)
        dtype = np.uint8 if self._max_parallelism <= 1 << 8 else np.uint16
        fresh = np.empty(width, dtype=dtype)
        if table is None:
            fresh[:] = self._hash(low, high)
        else:
            before, after = old_low - low, high - (old_low + len(table) - 1)
            fresh[before : before + len(table)] = table
            if before:
                fresh[:before] = self._hash(low, old_low - 1)
            if after:
                fresh[width - after :] = self._hash(high - after + 1, high)
        self._table, self._low = fresh, low
        return fresh[keys - low]

    def _hash(self, low: int, high: int) -> Any:
        keys = np.arange(low, high + 1, dtype=np.int64)
        return int_key_groups(keys, self._key_type, self._max_parallelism)
