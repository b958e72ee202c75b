"""Key groups: a stable hash of each key, and Flink's assignment of key groups to subtasks.

``key_group = stable_hash(key) % max_parallelism``; subtask ``i`` of ``p`` owns the
key groups ``[ceil(i*M/p), ceil((i+1)*M/p))``, as Flink's KeyGroupRangeAssignment.
The hash never uses Python's ``hash()``, which is salted per process for ``str``.
"""

from __future__ import annotations

import math
import pickle
import struct
import zlib
from collections.abc import Callable
from typing import Any

UPPER_BOUND_MAX_PARALLELISM = 1 << 15
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 1 << 7
_MASK64 = (1 << 64) - 1
_pack_double = struct.Struct(">d").pack


def _fmix64(h: int) -> int:
    """Fibonacci hashing: one multiply, keep the high bits (the low bits of a product
    depend only on the low bits of the key, so they would spread keys badly)."""
    return ((h * 0x9E3779B97F4A7C15) & _MASK64) >> 24


def _hash_str(key: str) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass"))


def _hash_int(key: int) -> int:
    return ((key * 0x9E3779B97F4A7C15) & _MASK64) >> 24


def _hash_bytes(key: bytes) -> int:
    return zlib.crc32(key)


def _hash_float(key: float) -> int:
    if key.is_integer():  # 1.0 and 1 are equal keys in Python, so they must hash alike
        return _fmix64(int(key))
    return _hash_bytes(_pack_double(key))


def _hash_sequence(key: tuple[Any, ...] | list[Any]) -> int:
    h = 17
    for item in key:
        h = (h * 31 + stable_hash(item)) & _MASK64
    return _fmix64(h)


def _hash_other(key: Any) -> int:
    # Rows and other tuple-likes hash by their fields; anything else by its pickle, which
    # is stable across processes for the value types keys are made of.
    if isinstance(key, tuple):
        return _hash_sequence(key)
    return _hash_bytes(pickle.dumps(key, protocol=5))


_BY_TYPE: dict[type, Callable[[Any], int]] = {
    int: _hash_int,
    bool: _hash_int,
    str: _hash_str,
    bytes: _hash_bytes,
    float: _hash_float,
    tuple: _hash_sequence,
    list: _hash_sequence,
    type(None): lambda _key: 0,
}


def stable_hash(key: Any) -> int:
    """A 64-bit hash of ``key`` that is the same in every process and run."""
    return _BY_TYPE.get(type(key), _hash_other)(key)


def assign_to_key_group(key: Any, max_parallelism: int) -> int:
    return stable_hash(key) % max_parallelism


def compute_operator_index_for_key_group(
    max_parallelism: int, parallelism: int, key_group: int
) -> int:
    return key_group * parallelism // max_parallelism


def assign_key_to_parallel_operator(key: Any, max_parallelism: int, parallelism: int) -> int:
    return compute_operator_index_for_key_group(
        max_parallelism, parallelism, assign_to_key_group(key, max_parallelism)
    )


def key_group_range_for_operator(
    max_parallelism: int, parallelism: int, operator_index: int
) -> range:
    """The key groups subtask ``operator_index`` owns (Flink's
    computeKeyGroupRangeForOperatorIndex)."""
    start = (operator_index * max_parallelism + parallelism - 1) // parallelism
    end = ((operator_index + 1) * max_parallelism - 1) // parallelism
    return range(start, end + 1)


def default_max_parallelism(parallelism: int) -> int:
    """Flink's default: 1.5 x parallelism rounded up to a power of two, within [128, 32768]."""
    wanted = parallelism + parallelism // 2
    rounded = 1 << max(0, math.ceil(math.log2(max(wanted, 1))))
    return min(max(rounded, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)
