import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from weir.common.types import Row, RowKind
from weir.core.key_groups import (
    PyFlinkKeyHasher,
    assign_key_to_parallel_operator,
    assign_to_key_group,
    compute_operator_index_for_key_group,
    default_max_parallelism,
    java_bytes_hash,
    java_hash_code,
    java_string_hash,
    key_group_range_for_operator,
    legacy_key_placement,
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


class TestTupleAndRowKeys:
    """Keys of a declared TUPLE or ROW type are Java objects in PyFlink: a Flink ``Tuple`` or
    ``Row`` whose ``hashCode()`` Flink murmur-hashes. The figures are those of Flink 2.3's own
    classes (``Row.of(key).hashCode()`` and ``KeyGroupRangeAssignment.assignToKeyGroup``)."""

    def test_a_tuple_key_is_hashed_as_a_flink_tuple(self):
        assert java_hash_code("Tuple<String, Integer>")(("f", 6)) == 3168
        assert assign_to_key_group(("f", 6), 128, "Tuple<String, Integer>") == 63
        assert assign_key_to_parallel_operator(("f", 6), 128, 2, "Tuple<String, Integer>") == 0
        assert assign_to_key_group(("a", 1), 128, "Tuple<String, Long>") == 44
        assert assign_to_key_group(("x", 2.5, True), 128, "Tuple<String, Double, Boolean>") == 56

    def test_a_row_key_is_hashed_as_a_flink_row(self):
        assert java_hash_code("Row<String, Integer>")(Row("f", 6)) == 5121
        assert assign_to_key_group(Row("f", 6), 128, "Row<String, Integer>") == 87
        assert assign_to_key_group(Row("a", None), 128, "Row<String, Integer>") == 112
        deleted = Row("f", 6)
        deleted.set_row_kind(RowKind.DELETE)
        assert assign_to_key_group(deleted, 128, "Row<String, Integer>") == 107

    def test_nested_tuples_and_rows(self):
        assert (
            assign_to_key_group((("a", 1), "b"), 128, "Tuple<Tuple<String, Integer>, String>") == 77
        )
        assert (
            assign_to_key_group(Row(Row("a", 1), "b"), 128, "Row<Row<String, Integer>, String>")
            == 19
        )
        assert (
            assign_to_key_group((Row("a", 1), "b"), 128, "Tuple<Row<String, Integer>, String>") == 4
        )
        assert (
            assign_to_key_group(Row(("a", 1), "b"), 128, "Row<Tuple<String, Integer>, String>")
            == 97
        )

    def test_a_null_key_is_a_null_field(self):
        # Row.of(null).hashCode() is 31: PyFlink's key row holds a null, whatever the type.
        assert assign_to_key_group(None, 128, "Tuple<String, Integer>") == 123
        assert assign_to_key_group(None, 128, "String") == 123
        assert assign_to_key_group(None, 128) == 123

    def test_a_key_type_with_a_field_of_another_type_is_placed_by_its_pickled_bytes(self):
        hasher = PyFlinkKeyHasher("Tuple<String, pickled>")
        assert hasher.key_type == "pickled"
        assert hasher.key_group(("a", [1]), 128) == assign_to_key_group(("a", [1]), 128)

    def test_the_key_type_name_is_normalised(self):
        assert PyFlinkKeyHasher("Tuple<String,Integer>").key_type == "Tuple<String, Integer>"
        assert PyFlinkKeyHasher("Row<Tuple<Long, Char>, Double>").key_type == (
            "Row<Tuple<Long, Char>, Double>"
        )

    def test_old_placement_of_each_key_type(self):
        # Before Java's hashing of composite keys, every key type but a basic one was placed
        # by its pickled bytes.
        assert legacy_key_placement("Tuple<String, Integer>") == "pickled"
        assert legacy_key_placement("Row<String>") == "pickled"
        assert legacy_key_placement("String") == "String"
        assert legacy_key_placement("pickled") == "pickled"
