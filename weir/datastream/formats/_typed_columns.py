"""Arrow columns of a declared ``RowType`` made into the numpy columns of a ``ColumnBatch``,
whose records are the Rows PyFlink's file formats produce.

A column becomes, by its declared type: BOOLEAN ``bool``; TINYINT to BIGINT ``int8`` to
``int64``; FLOAT ``float32``; DOUBLE ``float64``; any of these with a null in the batch an
``object`` array of Python values and None (numpy has no null); strings, DECIMAL
(``decimal.Decimal``), DATE (``datetime.date``), TIMESTAMP (``datetime.datetime``, in
milliseconds, as PyFlink hands timestamps to Python) and ARRAY (lists) ``object`` arrays.
"""

from __future__ import annotations

from typing import Any

from weir.common.typeinfo import TypeInformation
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.errors import WeirError
from weir.datastream._column_specs import column_spec
from weir.table.types import (
    ArrayType,
    BigIntType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntType,
    RowType,
    SmallIntType,
    TimestampType,
    TinyIntType,
    VarCharType,
    to_type_info,
)


class FileFormatError(WeirError, ValueError):
    """A file's content does not fit the format that reads it (a value that is not of
    its column's type, a row with the wrong number of columns)."""


_NUMPY_TYPES: dict[type[DataType], str] = {
    BooleanType: "bool",
    TinyIntType: "int8",
    SmallIntType: "int16",
    IntType: "int32",
    BigIntType: "int64",
    FloatType: "float32",
    DoubleType: "float64",
}


def arrow_type(data_type: DataType) -> Any:
    """The Arrow type a column of ``data_type`` is read as."""
    import pyarrow as pa  # noqa: PLC0415 (only the columnar formats need pyarrow)

    if isinstance(data_type, DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, (VarCharType, CharType)):
        return pa.string()
    if isinstance(data_type, DateType):
        return pa.date32()
    if isinstance(data_type, TimestampType):
        return pa.timestamp("ms")
    if isinstance(data_type, ArrayType):
        return pa.list_(arrow_type(data_type.element_type))
    numpy_type = _NUMPY_TYPES.get(type(data_type))
    if numpy_type is None:
        msg = (
            f"{data_type!r} cannot be read from files; use BOOLEAN, TINYINT, SMALLINT, INT, "
            "BIGINT, FLOAT, DOUBLE, DECIMAL, CHAR, VARCHAR, STRING, DATE, TIMESTAMP or ARRAY"
        )
        raise TypeError(msg)
    return pa.from_numpy_dtype(numpy_type)


def check_row_type(row_type: Any, owner: str) -> RowType:
    """``row_type`` when it is a RowType whose fields can all be read, else a clear error."""
    if not isinstance(row_type, RowType):
        msg = (
            f"{owner} reads rows of a DataTypes.ROW([...]); got {row_type!r} (import DataTypes "
            "from weir.table)"
        )
        raise TypeError(msg)
    if not len(row_type):
        msg = f"{owner}: the row type has no fields"
        raise ValueError(msg)
    for field in row_type:
        arrow_type(field.data_type)
    return row_type


class RowColumns:
    """Makes ColumnBatches of Rows with the fields of ``row_type`` from Arrow arrays of
    their ``arrow_type``s (picklable: it travels with the source)."""

    def __init__(self, row_type: RowType) -> None:
        self.row_type = row_type
        self.names = tuple(row_type.field_names())
        self.type_info: TypeInformation = to_type_info(row_type)
        spec = column_spec(self.type_info)
        assert spec is not None
        self.spec: ColumnSpec = spec

    def batch(self, arrays: list[Any]) -> ColumnBatch:
        return ColumnBatch(
            {
                name: numpy_column(array, field.data_type)
                for name, array, field in zip(self.names, arrays, self.row_type, strict=True)
            },
            self.spec,
        )


def numpy_column(array: Any, data_type: DataType) -> Any:
    """The numpy column of the Arrow ``array`` of ``data_type`` (see the module docstring)."""
    import numpy as np  # noqa: PLC0415
    import pyarrow as pa  # noqa: PLC0415

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if type(data_type) in _NUMPY_TYPES and array.null_count == 0:
        return array.to_numpy(zero_copy_only=False)
    if isinstance(data_type, (VarCharType, CharType, DecimalType)):
        return array.to_numpy(zero_copy_only=False)
    return _objects(array.to_pylist(), np)


def _objects(values: list[Any], np: Any) -> Any:
    column = np.empty(len(values), dtype=object)
    if any(isinstance(v, list) for v in values):
        # Assigned one by one: numpy would take a list of lists for a 2-d array.
        for i, value in enumerate(values):
            column[i] = value
    else:
        column[:] = values
    return column
