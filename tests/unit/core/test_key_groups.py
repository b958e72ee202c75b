import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from weir.core.key_groups import (
    assign_key_to_parallel_operator,
    assign_to_key_group,
    compute_operator_index_for_key_group,
    default_max_parallelism,
    java_bytes_hash,
    java_string_hash,
    key_group_range_for_operator,
)

keys = st.one_of(
    st.integers(),
    st.text(),
    st.binary(),
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.tuples(st.integers(), st.text()),
)


class TestKeyGroupRanges:
    @given(st.integers(1, 512), st.data())
    def test_ranges_partition_all_key_groups_in_order(self, max_parallelism, data):
        parallelism = data.draw(st.integers(1, max_parallelism))
        covered = []
        for index in range(parallelism):
            covered.extend(key_group_range_for_operator(max_parallelism, parallelism, index))
        assert covered == list(range(max_parallelism))

    @given(st.integers(1, 512), st.data())
    def test_operator_index_owns_the_key_group(self, max_parallelism, data):
        parallelism = data.draw(st.integers(1, max_parallelism))
        key_group = data.draw(st.integers(0, max_parallelism - 1))
        index = compute_operator_index_for_key_group(max_parallelism, parallelism, key_group)
        assert key_group in key_group_range_for_operator(max_parallelism, parallelism, index)

    def test_matches_flink_for_known_values(self):
        # Flink's KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(128, 3, i)
        assert [
            (r.start, r.stop - 1)
            for r in (key_group_range_for_operator(128, 3, i) for i in range(3))
        ] == [(0, 42), (43, 85), (86, 127)]

    def test_default_max_parallelism_follows_flink(self):
        assert default_max_parallelism(1) == 128
        assert default_max_parallelism(100) == 256
        assert default_max_parallelism(30000) == 32768


class TestPyFlinkKeyPlacement:
    """Where PyFlink 2.3 put keys 0..7 (no key_type) and "k0".."k7" (Types.STRING()) at
    parallelism 4, read off its print() output: the hasher must put them there too."""

    def test_untyped_keys_go_where_pyflink_puts_them(self):
        placed = [assign_key_to_parallel_operator(k, 128, 4) + 1 for k in range(8)]
        assert placed == [1, 2, 1, 3, 1, 1, 3, 1]

    def test_string_keys_go_where_pyflink_puts_them(self):
        placed = [assign_key_to_parallel_operator(f"k{i}", 128, 4, "String") + 1 for i in range(8)]
        assert placed == [1, 1, 3, 1, 2, 2, 4, 1]

    def test_java_hash_codes(self):
        assert java_string_hash("hello") == 99162322
        assert java_string_hash("") == 0
        assert java_bytes_hash(b"") == 1
        assert java_bytes_hash(bytes([0x80, 0x01])) == (31 + -128) * 31 + 1

    @given(keys)
    def test_equal_keys_same_group(self, key):
        assert assign_to_key_group(key, 128) == assign_to_key_group(key, 128)
        assert 0 <= assign_to_key_group(key, 128) < 128

    def test_same_in_another_process(self):
        sample = ["auction-1", "", "ünïcødé", 42, -7, (1, "a"), 2.5, None, b"xy"]
        # ordered by their salted hashes in a process: placed in an order of their own
        sample += [frozenset({"x", "yy", "zzz", "wwww"}), {"b": 1, "a": (2, "c")}, True, 2.0]
        here = [assign_to_key_group(k, 32768) for k in sample]
        code = (
            "from weir.core.key_groups import assign_to_key_group;"
            f"print([assign_to_key_group(k, 32768) for k in {sample!r}])"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": "12345"},
        ).stdout
        assert out.strip() == repr(here)

    def test_spreads_nexmark_auctions_over_subtasks(self):
        counts = [0, 0]
        for i in range(20_000):
            counts[assign_key_to_parallel_operator(i * 7919 % 10000, 128, 2)] += 1
        assert min(counts) > 8_000
