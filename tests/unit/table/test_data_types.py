"""DataTypes: PyFlink's names and reprs, and the DataStream type each becomes."""

from __future__ import annotations

import pytest

from weir.common import Types
from weir.table import DataTypes
from weir.table.types import RowField, RowType, to_type_info


def test_row_types_are_built_and_read_as_in_pyflink():
    row = DataTypes.ROW(
        [DataTypes.FIELD("a", DataTypes.INT()), DataTypes.FIELD("b", DataTypes.STRING())]
    )
    assert isinstance(row, RowType)
    assert row.field_names() == ["a", "b"]
    assert row["b"] == RowField("b", DataTypes.STRING())
    assert row[0].data_type == DataTypes.INT()
    assert [f.name for f in row] == ["a", "b"]
    assert (
        repr(row) == "RowType(RowField(a, IntType(true), ...),"
        "RowField(b, VarCharType(2147483647, true), ...))"
    )
    assert repr(DataTypes.DECIMAL(10, 2)) == "DecimalType(10, 2, true)"
    assert repr(DataTypes.BIGINT().not_null()) == "BigIntType(false)"
    assert DataTypes.ARRAY(DataTypes.INT()) != DataTypes.ARRAY(DataTypes.BIGINT())
    assert RowType().add("x", DataTypes.DOUBLE()) == DataTypes.ROW(
        [DataTypes.FIELD("x", DataTypes.DOUBLE())]
    )
    with pytest.raises(KeyError, match="No RowField named c"):
        row["c"]


def test_each_type_becomes_its_datastream_type():
    row = DataTypes.ROW(
        [
            DataTypes.FIELD("bo", DataTypes.BOOLEAN()),
            DataTypes.FIELD("ti", DataTypes.TINYINT()),
            DataTypes.FIELD("sm", DataTypes.SMALLINT()),
            DataTypes.FIELD("in", DataTypes.INT()),
            DataTypes.FIELD("bi", DataTypes.BIGINT()),
            DataTypes.FIELD("fl", DataTypes.FLOAT()),
            DataTypes.FIELD("do", DataTypes.DOUBLE()),
            DataTypes.FIELD("de", DataTypes.DECIMAL(5, 2)),
            DataTypes.FIELD("st", DataTypes.STRING()),
            DataTypes.FIELD("da", DataTypes.DATE()),
            DataTypes.FIELD("ts", DataTypes.TIMESTAMP(3)),
            DataTypes.FIELD("ar", DataTypes.ARRAY(DataTypes.INT())),
        ]
    )
    assert to_type_info(row) == Types.ROW_NAMED(
        ["bo", "ti", "sm", "in", "bi", "fl", "do", "de", "st", "da", "ts", "ar"],
        [
            Types.BOOLEAN(),
            Types.BYTE(),
            Types.SHORT(),
            Types.INT(),
            Types.LONG(),
            Types.FLOAT(),
            Types.DOUBLE(),
            Types.BIG_DEC(),
            Types.STRING(),
            Types.SQL_DATE(),
            Types.SQL_TIMESTAMP(),
            Types.LIST(Types.INT()),
        ],
    )


def test_bad_types_say_what_is_allowed():
    with pytest.raises(ValueError, match="precision must be 1 to 38"):
        DataTypes.DECIMAL(40, 2)
    with pytest.raises(TypeError, match="must be a DataType"):
        DataTypes.FIELD("a", int)
