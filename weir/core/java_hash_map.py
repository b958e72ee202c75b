"""The iteration order of a ``java.util.HashMap``, for maps that travel through Java in
PyFlink.

A PyFlink map field is a Java ``HashMap`` between two Python functions, so the keys come
back in the order the map iterates: by bucket, ``(h ^ (h >>> 16)) & (capacity - 1)`` of
the key's ``hashCode()``, and within a bucket in the order the keys went in. The capacity
is a power of two that doubles whenever the map holds more than 3/4 of it, and also when
one bucket holds more than 8 keys while the capacity is below 64 (Java then prefers a
resize to a tree). A bucket that does become a tree (more than 8 colliding keys at a
capacity of 64 or more) iterates in an order of its own, which is not followed here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["DEFAULT_CAPACITY", "hash_map_order", "table_size_for"]

K = TypeVar("K")

DEFAULT_CAPACITY = 16
"""``new HashMap<>()``."""
_MIN_TREEIFY_CAPACITY = 64
_TREEIFY_THRESHOLD = 8


def table_size_for(expected: int) -> int:
    """The capacity ``new HashMap<>(expected)`` starts with: the next power of two."""
    capacity = 1
    while capacity < expected:
        capacity <<= 1
    return capacity


def _spread(code: int) -> int:
    h = code & 0xFFFFFFFF
    return h ^ (h >> 16)


def hash_map_order(
    keys: Sequence[K], hash_code: Callable[[Any], int], capacity: int = DEFAULT_CAPACITY
) -> list[K]:
    """``keys`` in the order a HashMap of initial ``capacity`` iterates them after they
    were put in this order (no key twice)."""
    spread = [_spread(hash_code(k)) for k in keys]
    chains: dict[int, int] = {}
    for size, h in enumerate(spread, start=1):
        bucket = h & (capacity - 1)
        length = chains.get(bucket, 0) + 1
        chains[bucket] = length
        grow = length > _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY
        if grow:
            capacity <<= 1
        if size > capacity * 3 // 4:  # the threshold, (int) (capacity * 0.75)
            capacity <<= 1
            grow = True
        if grow:
            chains = {}
            for other in spread[:size]:
                b = other & (capacity - 1)
                chains[b] = chains.get(b, 0) + 1
    mask = capacity - 1
    order = sorted(range(len(keys)), key=lambda i: (spread[i] & mask, i))
    return [keys[i] for i in order]
