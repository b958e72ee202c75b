"""FLOAT values read back as PyFlink's collect reads them from Java, and the spec that says
where a type holds them."""

from __future__ import annotations

from weir.common import Row, Types
from weir.common.typeinfo import single_precision_spec
from weir.taskmanager.operators.collected_floats import collected_floats

SINGLE_1_23 = 1.2300000190734863


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


class TestCollected:
    def test_a_float_comes_back_as_the_text_java_prints(self):
        collect = collected_floats(single_precision_spec(Types.FLOAT()))
        assert collect([1 / 3, 1.23, SINGLE_1_23, None]) == [0.33333334, 1.23, 1.23, None]

    def test_inside_a_row(self):
        collect = collected_floats(
            single_precision_spec(Types.ROW([Types.STRING(), Types.FLOAT()]))
        )
        assert collect([Row("a", 1 / 3)]) == [Row("a", 0.33333334)]
