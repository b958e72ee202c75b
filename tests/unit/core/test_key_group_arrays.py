"""Key groups of integer key arrays (``int_key_groups``) are those the per-key hasher
gives every key, for every key type it computes, on the edges of every pickle layout of
an int and at any max parallelism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.core.key_group_arrays import int_key_groups, vectorised_key_type
from weir.core.key_groups import PyFlinkKeyHasher

KEY_TYPES = ["pickled", "Integer", "Long", "Short", "Byte"]


def _edges() -> list[int]:
    """Each power of two up to 2**63 and its neighbours, both signs: where an int's
    pickle changes layout (1, 2, 4 bytes, LONG1 of 5 to 8 bytes) and where 32-bit
    truncation wraps."""
    values = {0, -(2**63), 2**63 - 1}
    for bit in range(64):
        for delta in (-2, -1, 0, 1):
            for value in ((1 << bit) + delta, -((1 << bit) + delta)):
                if -(2**63) <= value < 2**63:
                    values.add(value)
    return sorted(values)


@pytest.mark.parametrize("key_type", KEY_TYPES)
@pytest.mark.parametrize("max_parallelism", [1, 7, 128, 4096, 32768])
def test_edge_values_land_where_the_per_key_hasher_puts_them(key_type, max_parallelism):
    keys = _edges() + list(range(-70_000, 70_000, 13))
    hasher = PyFlinkKeyHasher(key_type)
    got = int_key_groups(np.array(keys, dtype=np.int64), key_type, max_parallelism)
    assert got.tolist() == [hasher.key_group(k, max_parallelism) for k in keys]


@given(
    keys=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=200),
    key_type=st.sampled_from(KEY_TYPES),
    max_parallelism=st.integers(1, 32768),
)
def test_any_int64_keys_land_where_the_per_key_hasher_puts_them(keys, key_type, max_parallelism):
    hasher = PyFlinkKeyHasher(key_type)
    got = int_key_groups(np.array(keys, dtype=np.int64), key_type, max_parallelism)
    assert got.tolist() == [hasher.key_group(k, max_parallelism) for k in keys]


def test_a_strided_view_is_hashed_as_its_values():
    keys = np.arange(-1000, 1000, dtype=np.int64) * 77_777_777
    view = keys[::3]
    hasher = PyFlinkKeyHasher()
    assert int_key_groups(view, "pickled", 128).tolist() == [
        hasher.key_group(k, 128) for k in view.tolist()
    ]


def test_no_keys_have_no_key_groups():
    assert int_key_groups(np.zeros(0, dtype=np.int64), "pickled", 128).tolist() == []


def test_other_key_types_have_no_array_form():
    assert int_key_groups(np.arange(3, dtype=np.int64), "String", 128) is None
    assert not vectorised_key_type("Tuple<Integer, Integer>")
    assert vectorised_key_type("Long")
