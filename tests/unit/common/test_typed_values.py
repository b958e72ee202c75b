"""collection_conformer(type): what from_collection makes of its elements in PyFlink:
tuples become Rows of a Row type, Rows are named at every depth, maps come in the order of
the Java HashMap Pyrolite unpickles them into."""

from weir.common import Row, Types
from weir.common.typed_values import collection_conformer

CUSTOMER = Types.ROW_NAMED(["name", "tier"], [Types.STRING(), Types.INT()])


def test_tuples_become_rows_and_maps_are_unpickled_in_reverse_first():
    convert = collection_conformer(
        Types.ROW_NAMED(["c", "m"], [CUSTOMER, Types.MAP(Types.INT(), Types.STRING())]),
    )
    out = convert(Row(("ann", 2), {100: "a", 3: "b", 17: "c", 16: "d", 1: "e"}))
    assert out.c.name == "ann"
    assert list(out.m) == [16, 1, 17, 3, 100]


def test_types_without_rows_or_maps_need_nothing():
    assert collection_conformer(Types.INT()) is None
    assert collection_conformer(Types.TUPLE([Types.INT(), Types.STRING()])) is None
