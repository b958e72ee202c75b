"""FLOAT values rounded to single precision per batch, as PyFlink's coder packs them, and
read back as PyFlink's collect reads them from Java."""

from __future__ import annotations

import math

from weir.common import Row, Types
from weir.common.typeinfo import single_precision_spec
from weir.taskmanager.operators.float_rounding import collected_floats, single_precision_rounding

SINGLE_1_23 = 1.2300000190734863


def rounding(type_info):
    return single_precision_rounding(single_precision_spec(type_info))


class TestSinglePrecisionSpec:
    def test_types_without_a_float_need_nothing(self):
        for type_info in (
            Types.DOUBLE(),
            Types.STRING(),
            Types.ROW([Types.STRING(), Types.DOUBLE()]),
            Types.LIST(Types.INT()),
            None,
        ):
            assert single_precision_spec(type_info) is None
            assert rounding(type_info) is None
            assert collected_floats(single_precision_spec(type_info)) is None

    def test_a_float_anywhere_is_found(self):
        assert single_precision_spec(Types.FLOAT()) == ("float",)
        assert single_precision_spec(Types.TUPLE([Types.STRING(), Types.FLOAT()])) == (
            "tuple",
            (None, ("float",)),
        )
        assert single_precision_spec(Types.MAP(Types.STRING(), Types.LIST(Types.FLOAT()))) == (
            "map",
            None,
            ("list", ("float",)),
        )
        assert single_precision_spec(Types.PRIMITIVE_ARRAY(Types.FLOAT())) == ("list", ("float",))


class TestRounding:
    def test_a_batch_of_floats_in_one_pass(self):
        assert rounding(Types.FLOAT())([1.23, 2.5, -0.1, 3]) == [
            SINGLE_1_23,
            2.5,
            -0.10000000149011612,
            3.0,
        ]

    def test_none_and_values_that_are_no_number_are_kept(self):
        assert rounding(Types.FLOAT())([1.23, None, "x"]) == [SINGLE_1_23, None, "x"]

    def test_beyond_the_range_of_a_float_is_infinity(self):
        assert rounding(Types.FLOAT())([1e300, -1e300]) == [math.inf, -math.inf]

    def test_composites_are_rebuilt_and_the_originals_left_alone(self):
        row = Row(name="a", price=1.23)
        row.set_row_kind(row.get_row_kind())
        pair = ("a", 1.23)
        [new_row] = rounding(Types.ROW_NAMED(["name", "price"], [Types.STRING(), Types.FLOAT()]))(
            [row]
        )
        [new_pair] = rounding(Types.TUPLE([Types.STRING(), Types.FLOAT()]))([pair])
        assert new_row == Row(name="a", price=SINGLE_1_23)
        assert new_row is not row and row.price == 1.23
        assert new_pair == ("a", SINGLE_1_23) and pair == ("a", 1.23)

    def test_lists_and_maps(self):
        assert rounding(Types.LIST(Types.FLOAT()))([[1.23, None], None]) == [
            [SINGLE_1_23, None],
            None,
        ]
        assert rounding(Types.MAP(Types.STRING(), Types.FLOAT()))([{"k": 1.23}]) == [
            {"k": SINGLE_1_23}
        ]


class TestCollected:
    def test_a_float_comes_back_as_the_text_java_prints(self):
        collect = collected_floats(single_precision_spec(Types.FLOAT()))
        assert collect([1 / 3, 1.23, SINGLE_1_23, None]) == [0.33333334, 1.23, 1.23, None]

    def test_inside_a_row(self):
        collect = collected_floats(
            single_precision_spec(Types.ROW([Types.STRING(), Types.FLOAT()]))
        )
        assert collect([Row("a", 1 / 3)]) == [Row("a", 0.33333334)]
