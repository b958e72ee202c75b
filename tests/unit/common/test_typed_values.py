"""conformer(type): what a declared type makes of a value on its way to the next function
in PyFlink: Rows named at every depth, maps in Java HashMap order."""

from weir.common import Row, Types
from weir.common.typed_values import conformer

CUSTOMER = Types.ROW_NAMED(["name", "tier"], [Types.STRING(), Types.INT()])
ORDER = Types.ROW_NAMED(
    ["id", "customer", "items", "by_tag", "pair"],
    [
        Types.INT(),
        CUSTOMER,
        Types.LIST(CUSTOMER),
        Types.MAP(Types.STRING(), CUSTOMER),
        Types.TUPLE([Types.STRING(), Types.OBJECT_ARRAY(CUSTOMER)]),
    ],
)


def test_nested_positional_rows_get_their_names_at_every_depth():
    value = Row(1, Row("ann", 2), [Row("bo", 3)], {"t": Row("cy", 4)}, ("p", [Row("di", 5)]))
    out = conformer(ORDER)(value)
    assert out.customer.tier == 2
    assert out.items[0].name == "bo"
    assert out.by_tag["t"].tier == 4
    assert out.pair[1][0].name == "di"
    assert isinstance(out.pair, tuple)


def test_a_row_named_otherwise_is_rebuilt_in_the_types_order():
    out = conformer(CUSTOMER)(Row(tier=2, name="ann"))
    assert repr(out) == "Row(name='ann', tier=2)"


def test_maps_come_in_hash_map_order_and_untyped_values_pass():
    convert = conformer(Types.MAP(Types.INT(), Types.STRING()))
    assert list(convert({100: "a", 3: "b", 17: "c", 16: "d", 1: "e"})) == [16, 17, 1, 3, 100]
    assert conformer(Types.INT()) is None
    assert conformer(Types.ROW([Types.INT()]))(5) == 5


def test_from_collection_takes_tuples_for_rows_and_unpickles_maps_in_reverse_first():
    convert = conformer(
        Types.ROW_NAMED(["c", "m"], [CUSTOMER, Types.MAP(Types.INT(), Types.STRING())]),
        from_collection=True,
    )
    out = convert(Row(("ann", 2), {100: "a", 3: "b", 17: "c", 16: "d", 1: "e"}))
    assert out.c.name == "ann"
    assert list(out.m) == [16, 1, 17, 3, 100]
