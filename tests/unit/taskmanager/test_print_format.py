"""print() renders records as PyFlink prints them: str() for untyped streams, Java's
toString for typed ones."""

import datetime

import pytest

from weir.common import Row, Types
from weir.common.typeinfo import print_format_spec
from weir.taskmanager.operators.print_format import build_renderer, java_double


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (0.5, "0.5"),
        (1e7, "1.0E7"),
        (1.5e10, "1.5E10"),
        (-2.5e-5, "-2.5E-5"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (123456.789, "123456.789"),
        (float("nan"), "NaN"),
    ],
)
def test_doubles_print_as_java_does(value, text):
    assert java_double(value) == text


@pytest.mark.parametrize(
    ("type_info", "value", "text"),
    [
        (None, ("a", 1), "('a', 1)"),
        (Types.PICKLED_BYTE_ARRAY(), [1, "x"], "[1, 'x']"),
        (Types.STRING(), "hello", "hello"),
        (Types.TUPLE([Types.STRING(), Types.INT()]), ("a", 1), "(a,1)"),
        (Types.TUPLE([Types.STRING(), Types.BOOLEAN()]), ("a", False), "(a,false)"),
        (Types.ROW([Types.STRING(), Types.DOUBLE()]), Row("a", 2.0), "+I[a,2.0]"),
        # PyFlink makes a Row text in Python (each field's str()) before printing it.
        (Types.ROW_NAMED(["n", "v"], [Types.STRING(), Types.LONG()]), Row("a", None), "+I[a,None]"),
        (Types.ROW([Types.DOUBLE(), Types.BOOLEAN()]), Row(1e20, True), "+I[1e+20,True]"),
        (Types.DOUBLE(), 6, "6.0"),
        (Types.FLOAT(), 1 / 3, "0.33333334"),
        (Types.FLOAT(), 16777217.0, "1.6777216E7"),
        (
            Types.SQL_TIMESTAMP(),
            datetime.datetime(2024, 2, 29, 13, 5, 7, 123000),
            "2024-02-29 13:05:07.123",
        ),
        (Types.SQL_TIMESTAMP(), datetime.datetime(2024, 2, 29, 13, 5, 7), "2024-02-29 13:05:07.0"),
        (Types.LIST(Types.INT()), [1, 2], "[1, 2]"),
        (Types.MAP(Types.STRING(), Types.INT()), {"a": 1}, "{a=1}"),
        (
            Types.TUPLE([Types.INT(), Types.TUPLE([Types.STRING(), Types.INT()])]),
            (1, ("b", 2)),
            "(1,(b,2))",
        ),
        # A Row inside a typed tuple is Java's to print: Row.toString, fields Java's way.
        (
            Types.TUPLE([Types.INT(), Types.ROW([Types.STRING(), Types.DOUBLE(), Types.INT()])]),
            (1, Row("x", 2.0, None)),
            "(1,+I[x, 2.0, null])",
        ),
        # java.sql.Time prints without its fraction.
        (Types.SQL_TIME(), datetime.time(1, 2, 3, 250000), "01:02:03"),
    ],
)
def test_records_render_as_pyflink_prints_them(type_info, value, text):
    assert build_renderer(print_format_spec(type_info))(value) == text
