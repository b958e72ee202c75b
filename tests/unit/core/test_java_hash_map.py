"""java.util.HashMap's iteration order, against orders PyFlink 2.3 printed for map fields
(tests/compat/p305 runs them through jobs)."""

from weir.core.java_hash_map import hash_map_order, table_size_for
from weir.core.key_groups import java_hash_code


def _new_hash_map(keys, type_name):
    return hash_map_order(keys, java_hash_code(type_name), table_size_for(len(keys)))


def test_buckets_of_int_keys_with_ties_in_insertion_order():
    assert _new_hash_map([100, 3, 17, 16, 1], "Integer") == [16, 17, 1, 3, 100]
    assert _new_hash_map([65536, 70000, 24, 8, 0, -1], "Integer") == [24, 8, 0, -1, 65536, 70000]


def test_capacity_grows_past_three_quarters():
    keys = [i * 13 for i in range(15, 0, -1)]  # 15 > 12 of 16: capacity 32
    expected = [65, 130, 195, 39, 104, 169, 13, 78, 143, 52, 117, 182, 26, 91, 156]
    assert _new_hash_map(keys, "Integer") == expected


def test_string_keys_use_string_hash_code():
    assert _new_hash_map(["banana", "apple", "cherry", "date"], "String") == [
        "banana",
        "date",
        "apple",
        "cherry",
    ]
    assert _new_hash_map(["", "é", "a", "日本"], "String") == ["", "é", "a", "日本"]


def test_long_keys_fold_their_halves():
    assert _new_hash_map([2**40, 5, -(2**33), 7], "Long") == [2**40, -(2**33), 5, 7]


def test_a_crowded_bucket_below_capacity_64_doubles_the_table():
    # Nine keys in bucket 0 of 16, well under the load factor: the ninth makes Java resize
    # (a tree only pays at 64 buckets or more), which splits them over buckets 0 and 16.
    keys = [i * 16 for i in range(9)]
    assert hash_map_order(keys, java_hash_code("Integer"), 16) == [
        0,
        32,
        64,
        96,
        128,
        16,
        48,
        80,
        112,
    ]
    assert hash_map_order(keys[:8], java_hash_code("Integer"), 16) == keys[:8]


def test_table_size_for_is_the_next_power_of_two():
    assert [table_size_for(n) for n in (0, 1, 2, 3, 5, 8, 9)] == [1, 1, 2, 4, 8, 8, 16]
