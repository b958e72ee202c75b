"""Row equality, hashing, repr and get_fields_by_names as PyFlink's (one table, checked
against what PyFlink 2.3 answers; tests/compat/p303 runs the same in a job)."""

import pytest

from weir.common.types import Row, RowKind


def _named_later():
    row = Row(1, 2)
    row.set_field_names(["a", "b"])
    return row


def _deleted():
    row = Row(a=1, b=2)
    row.set_row_kind(RowKind.DELETE)
    return row


EQUALITY = [
    (Row(a=1, b=2), Row(b=2, a=1), True),
    (Row(a=1, b=2), Row(1, 2), False),
    (Row(1, 2), Row(a=1, b=2), False),
    (Row(1, 2), Row(1, 2), True),
    (Row(1, 2), (1, 2), False),
    (Row(a=1, b=2), _named_later(), True),
    (Row(a=1, b=2), _deleted(), False),
    (Row(a=1, b=2), Row(a=1, c=2), False),
    (Row(a=1, b=2), Row(a=1, b=3), False),
    (Row(a=1, b=Row(x=1, y=2)), Row(b=Row(y=2, x=1), a=1), True),
]


@pytest.mark.parametrize(("left", "right", "equal"), EQUALITY)
def test_equality_is_pyflinks(left, right, equal):
    assert (left == right) is equal
    assert (left != right) is not equal


def test_hash_is_of_the_values_in_order():
    assert hash(Row(a=1, b=2)) == hash((1, 2))
    assert hash(Row(b=2, a=1)) == hash((2, 1))
    assert hash(Row(1, 2)) == hash((1, 2))
    assert len({Row(a=1, b=2), Row(b=2, a=1)}) == 2  # equal, hashed apart: PyFlink's too
    assert Row(b=2, a=1) in [Row(a=1, b=2)]


@pytest.mark.parametrize(
    ("row", "text"),
    [
        (Row(a=1, b=2), "Row(a=1, b=2)"),
        (Row(b=2, a=1), "Row(b=2, a=1)"),
        (Row(1, 2), "<Row(1, 2)>"),
        (Row(), "<Row()>"),
        (Row("name", "age"), "<Row('name', 'age')>"),
        (Row("name", "age")("ann", 3), "Row(name='ann', age=3)"),
        (_deleted(), "Row(a=1, b=2)"),
        (Row(k="x", v=Row(1, Row(n=2))), "Row(k='x', v=<Row(1, Row(n=2))>)"),
    ],
)
def test_repr_is_pyflinks(row, text):
    assert repr(row) == text


def test_get_fields_by_names_is_pyflinks():
    assert Row(b=2, a=1).get_fields_by_names(["a", "b"]) == [1, 2]
    assert Row(1, 2).get_fields_by_names(["z"]) == [1, 2]
    with pytest.raises(Exception, match=r"Field names \['z'\] not exist in \['a', 'b'\]\."):
        Row(a=1, b=2).get_fields_by_names(["a", "z"])
