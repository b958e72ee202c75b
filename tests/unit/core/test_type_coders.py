"""What PyFlink 2.3's coders make of a record of a declared type (written, then read
back), and what they refuse: each case below is what PyFlink did with the same value."""

from __future__ import annotations

import math
import pickle
from collections import namedtuple
from decimal import Decimal

import pytest

from weir.common import Row, Types
from weir.common.typed_values import declared_text, type_coder
from weir.common.types import RowKind
from weir.core.errors import DeclaredTypeError

SINGLE_1_23 = 1.2300000190734863
INT = Types.INT()
PAIR = Types.TUPLE([INT, INT])


def code(type_info, *records):
    return type_coder(type_info).code_batch(list(records), "Map")


def refused(type_info, *records):
    with pytest.raises(DeclaredTypeError) as info:
        code(type_info, *records)
    return str(info.value)


class TestBasicTypes:
    def test_integers_in_range_pass_and_the_batch_is_not_copied(self):
        batch = [1, -(2**31), 2**31 - 1]
        assert type_coder(INT).code_batch(batch, "Map") is batch

    def test_bools_and_floats_become_ints_as_cython_converts_them(self):
        assert code(INT, True, 1.7, -2.9, Decimal("4.5")) == [1, 1, -2, 4]
        assert all(type(v) is int for v in code(Types.LONG(), True, 2.0))

    def test_an_int_beyond_the_range_is_refused(self):
        assert "an int in [-2147483648, 2147483647]" in refused(INT, 1, 2**40)
        refused(Types.LONG(), 2**63)
        refused(Types.BYTE(), 200)
        refused(Types.SHORT(), -40000)

    def test_a_str_or_none_is_no_integer(self):
        message = refused(Types.LONG(), 1, "abc")
        assert "operator 'Map'" in message
        assert "Types.LONG()" in message
        assert "'abc' (str)" in message
        refused(Types.LONG(), None)

    def test_a_none_record_passes_only_as_a_string(self):
        assert code(Types.STRING(), None, "a") == [None, "a"]
        refused(Types.DOUBLE(), None)

    def test_booleans_take_ints_of_one_byte(self):
        assert code(Types.BOOLEAN(), True, 2, 0, 1.5) == [True, True, False, True]
        refused(Types.BOOLEAN(), 256)
        refused(Types.BOOLEAN(), "yes")

    def test_float_is_rounded_to_32_bits_and_double_is_a_float(self):
        assert code(Types.FLOAT(), 1.23, 3, 1e300) == [SINGLE_1_23, 3.0, math.inf]
        assert code(Types.DOUBLE(), 3, 1.23, True) == [3.0, 1.23, 1.0]
        assert all(type(v) is float for v in code(Types.DOUBLE(), 3, 1.5))
        refused(Types.FLOAT(), "1.5")
        refused(Types.DOUBLE(), None)

    def test_strings_and_bytes(self):
        batch = ["a", ""]
        assert type_coder(Types.STRING()).code_batch(batch, "Map") is batch
        assert "where the type takes a str" in refused(Types.STRING(), b"ab")
        refused(Types.STRING(), 5)
        assert code(Types.PRIMITIVE_ARRAY(Types.BYTE()), bytearray(b"ab")) == [b"ab"]
        refused(Types.PRIMITIVE_ARRAY(Types.BYTE()), "ab")

    def test_types_not_checked_here_have_no_coder(self):
        for type_info in (Types.PICKLED_BYTE_ARRAY(), None, Types.SQL_DATE(), Types.BIG_DEC()):
            assert type_coder(type_info) is None


class TestTuples:
    def test_a_tuple_of_the_types_fields_passes_as_it_is(self):
        batch = [(1, 2), (3, 4)]
        assert type_coder(PAIR).code_batch(batch, "Map") is batch

    def test_fields_beyond_the_types_are_dropped_as_pyflink_drops_them(self):
        assert code(PAIR, (1, 2), (3, 4, 5)) == [(1, 2), (3, 4)]

    def test_a_list_a_short_tuple_or_a_none_field_is_refused(self):
        assert "a tuple of 2 fields" in refused(PAIR, [1, 2])
        refused(PAIR, (1,))
        assert "field 1 of the record is None" in refused(PAIR, (1, None))

    def test_fields_are_coded_by_their_types(self):
        mixed = Types.TUPLE([Types.STRING(), Types.DOUBLE(), Types.FLOAT()])
        assert code(mixed, ("a", 1, 1.23)) == [("a", 1.0, SINGLE_1_23)]

    def test_a_named_tuple_is_no_tuple_to_cython(self):
        Point = namedtuple("Point", "x y")
        assert "(Point) where the type takes a tuple" in refused(PAIR, Point(1, 2))


CUSTOMER = Types.ROW_NAMED(["name", "tier"], [Types.STRING(), INT])


class TestRows:
    def test_a_positional_row_gets_the_types_names_in_a_new_row(self):
        row = Row("ann", 2)
        [out] = code(CUSTOMER, row)
        assert out.name == "ann" and out.tier == 2
        assert out is not row and "_fields" not in row.__dict__

    def test_a_row_named_otherwise_is_read_by_name(self):
        [out] = code(CUSTOMER, Row(tier=2, name="ann"))
        assert repr(out) == "Row(name='ann', tier=2)"
        assert "a Row with the fields ['name', 'tier']" in refused(CUSTOMER, Row(name="a", x=1))

    def test_none_fields_stay_and_the_kind_is_kept(self):
        row = Row.of_kind(RowKind.UPDATE_AFTER, None, 3)
        [out] = code(CUSTOMER, row)
        assert out.name is None and out.get_row_kind() is RowKind.UPDATE_AFTER

    def test_a_tuple_or_none_is_no_row(self):
        refused(CUSTOMER, ("ann", 2))
        refused(CUSTOMER, None)
        refused(CUSTOMER, Row("ann"))

    def test_nested_values_are_coded_and_named_in_errors(self):
        order = Types.ROW_NAMED(
            ["id", "customer", "items", "by_tag"],
            [INT, CUSTOMER, Types.LIST(CUSTOMER), Types.MAP(Types.STRING(), CUSTOMER)],
        )
        [out] = code(order, Row(1, Row("ann", 2), [Row("bo", 3)], {"t": Row("cy", 4)}))
        assert out.customer.tier == 2
        assert out.items[0].name == "bo"
        assert out.by_tag["t"].tier == 4
        message = refused(order, Row(1, Row("ann", 2), [Row("bo", "x")], {}))
        assert "field 'tier' of element 0 of field 'items' of the record is 'x'" in message

    def test_a_batch_named_as_the_type_comes_back_as_it_is(self):
        batch = [Row(name="ann", tier=1), Row(name="bo", tier=None)]
        assert type_coder(CUSTOMER).code_batch(batch, "Map") is batch

    def test_a_batch_of_positional_rows_gets_new_named_rows(self):
        batch = [Row("ann", 1), Row.of_kind(RowKind.DELETE, "bo", None), Row(name="cy", tier=3)]
        out = code(CUSTOMER, *batch)
        assert [repr(r) for r in out] == [
            "Row(name='ann', tier=1)",
            "Row(name='bo', tier=None)",
            "Row(name='cy', tier=3)",
        ]
        assert out[1].get_row_kind() is RowKind.DELETE
        assert all("_fields" not in r.__dict__ for r in batch[:2])

    def test_a_batch_with_a_refused_value_names_it(self):
        message = refused(CUSTOMER, Row("ann", 1), Row("bo", "x"), Row("cy", 3))
        assert "emitted Row(name='bo', tier='x')" in message or "'bo', 'x'" in message
        assert "field 'tier' of the record is 'x' (str)" in message
        message = refused(CUSTOMER, Row("ann", 1), Row("bo", 2**40))
        assert "an int in [-2147483648, 2147483647]" in message


class TestCollections:
    def test_lists_take_no_none_and_arrays_of_objects_do(self):
        assert code(Types.LIST(INT), [1, True]) == [[1, 1]]
        refused(Types.LIST(INT), [1, None])
        refused(Types.LIST(INT), (1, 2))
        assert code(Types.OBJECT_ARRAY(INT), [1, None]) == [[1, None]]

    def test_maps_come_in_hash_map_order(self):
        [out] = code(Types.MAP(INT, Types.STRING()), {100: "a", 3: "b", 17: "c", 16: "d", 1: "e"})
        assert list(out) == [16, 17, 1, 3, 100]
        [extras] = code(Types.MAP(Types.STRING(), INT), {"bags": 1, "lounge": 2})
        assert list(extras) == ["lounge", "bags"]

    def test_a_none_key_is_refused_and_none_values_stay(self):
        assert code(Types.MAP(Types.STRING(), INT), {"a": None}) == [{"a": None}]
        refused(Types.MAP(Types.STRING(), INT), {None: 1})
        refused(Types.MAP(Types.STRING(), INT), [("a", 1)])


class TestDeclaredTypeCoder:
    def test_a_source_leaves_what_does_not_fit_as_it_is(self):
        lenient = type_coder(Types.TUPLE([INT, Types.FLOAT()]), strict=False)
        assert lenient.code_batch([(1, 1.23), [3, 4], "x"], "Source") == [
            (1, SINGLE_1_23),
            [3, 4],
            "x",
        ]
        # nothing to make of a value that fits a type without Rows, maps or FLOATs
        assert type_coder(PAIR, strict=False) is None

    def test_a_side_output_is_named_in_errors(self):
        coder = type_coder(INT, what="side output 'late'")
        with pytest.raises(DeclaredTypeError, match="to its side output 'late', declared"):
            coder.code_batch(["x"], "Window")

    def test_it_travels_pickled(self):
        coder = pickle.loads(pickle.dumps(type_coder(Types.MAP(Types.STRING(), CUSTOMER))))
        [out] = coder.code_batch([{"b": Row("x", 1), "a": Row("y", 2)}], "Map")
        assert out["a"].tier == 2

    def test_types_are_named_as_programs_declare_them(self):
        assert declared_text(Types.TUPLE([Types.STRING(), Types.LIST(INT)])) == (
            "Types.TUPLE([Types.STRING(), Types.LIST(Types.INT())])"
        )
        assert declared_text(CUSTOMER) == (
            "Types.ROW_NAMED(['name', 'tier'], [Types.STRING(), Types.INT()])"
        )
        assert declared_text(Types.ROW([INT])) == "Types.ROW([Types.INT()])"
