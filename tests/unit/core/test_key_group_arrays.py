"""Key groups of integer arrays are exactly the per-key hasher's, for every form a
pickled integer takes and the declared integer key types."""

from __future__ import annotations

import numpy as np
import pytest

from weir.core.key_group_arrays import key_groups_of, supports_key_type
from weir.core.key_groups import PyFlinkKeyHasher

# Where the pickle of an int changes form (K, M, J, LONG1 of 5..8 bytes) and where a
# signed byte turns negative, on both sides, plus the int64 limits.
EDGES = [0, 1, 127, 128, 255, 256, 32767, 32768, 65535, 65536, -1, -127, -128, -129]
EDGES += [-255, -256, -257, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, -(2**63)]
EDGES += [s * 2**b + d for b in range(1, 63) for s in (1, -1) for d in (-1, 0, 1)]


def _keys() -> np.ndarray:
    rng = np.random.default_rng(7)
    return np.concatenate(
        [
            np.array([k for k in EDGES if -(2**63) <= k < 2**63], dtype=np.int64),
            rng.integers(-(2**63), 2**63 - 1, 2000, dtype=np.int64),
            rng.integers(-70_000, 70_000, 2000, dtype=np.int64),
        ]
    )


@pytest.mark.parametrize("key_type", ["pickled", "Long", "Integer", "Short", "Byte"])
@pytest.mark.parametrize("max_parallelism", [128, 7, 32768])
def test_the_same_key_groups_as_the_per_key_hasher(key_type: str, max_parallelism: int) -> None:
    keys = _keys()
    hasher = PyFlinkKeyHasher(key_type)
    expected = [hasher.key_group(k, max_parallelism) for k in keys.tolist()]
    assert key_groups_of(keys, max_parallelism, key_type).tolist() == expected


def test_other_key_types_are_placed_key_by_key() -> None:
    assert supports_key_type("pickled") and supports_key_type("Long")
    assert not supports_key_type("String")
    with pytest.raises(ValueError, match="key by key"):
        key_groups_of(np.arange(3), 128, "String")
