"""The bytes a BATCH job sorts keys of a declared TUPLE or ROW type by: Flink 2.3's
RowSerializer of ``Row.of(key)`` over the key type's serializer, byte for byte (the figures
are Flink's own serializers' output), each byte's sign bit flipped."""

from __future__ import annotations

from weir.common.types import Row, RowKind
from weir.core.sort_keys import sort_key_function


def _flink_bytes(key_type: str, key: object) -> str:
    flipped = sort_key_function(key_type)(key)
    return bytes(b ^ 0x80 for b in flipped).hex()


def test_a_tuple_key_is_its_fields_one_after_another():
    assert _flink_bytes("Tuple<String, Integer>", ("f", 6)) == "00026600000006"
    assert (
        _flink_bytes("Tuple<String, Double, Boolean>", ("x", 2.5, True))
        == "000278400400000000000001"
    )


def test_a_row_key_starts_with_its_kind_and_null_mask():
    assert _flink_bytes("Row<String, Integer>", Row("f", 6)) == "0000026600000006"
    assert _flink_bytes("Row<String, Integer>", Row("a", None)) == "00100261"
    deleted = Row("f", 6)
    deleted.set_row_kind(RowKind.DELETE)
    assert _flink_bytes("Row<String, Integer>", deleted) == "00c0026600000006"
    seven = Row(1, None, 3, None, 5, 6, None)
    assert (
        _flink_bytes("Row<Integer, Integer, Integer, Integer, Integer, Integer, Integer>", seven)
        == "00148000000001000000030000000500000006"
    )


def test_nested_keys():
    assert (
        _flink_bytes("Row<Tuple<String, Integer>, String>", Row(("a", 1), "b"))
        == "00000261000000010262"
    )


def test_tuple_keys_sort_by_their_fields_bytes():
    keys = [("b", 1), ("a", 2), ("a", -1), ("é", 0), ("aa", 0)]
    # Strings by their length first (StringValue's length prefix), bytes compared signed.
    assert sorted(keys, key=sort_key_function("Tuple<String, Integer>")) == [
        ("é", 0),
        ("a", -1),
        ("a", 2),
        ("b", 1),
        ("aa", 0),
    ]
