"""How a stream's declared type becomes a ``ColumnSpec`` (weir.core.columnar): field
names, how a record is made of its fields, and the numpy dtype of each column."""

from __future__ import annotations

from typing import Any

from weir.common.typeinfo import BasicTypeInfo, RowTypeInfo, TupleTypeInfo, TypeInformation
from weir.common.types import Row, RowKind
from weir.core.columnar import ColumnSpec

# Column dtypes of the basic types with a fixed-size numpy form (Flink's Java widths).
_NUMPY_DTYPES = {
    "Boolean": "bool",
    "Byte": "int8",
    "Short": "int16",
    "Integer": "int32",
    "Long": "int64",
    "Float": "float32",
    "Double": "float64",
}


def _dtype(type_info: TypeInformation) -> str | None:
    if isinstance(type_info, BasicTypeInfo):
        return _NUMPY_DTYPES.get(repr(type_info))
    return None


def named_row(names: tuple[str, ...], *values: Any) -> Row:
    row = Row(*values)
    row.set_field_names(list(names))
    return row


class _RowMaker:
    """Builds Rows with the type's field names (picklable, unlike a closure)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def __call__(self, *values: Any) -> Row:
        # named_row's Row, its attributes put in place at once: Row.__setattr__ is Python
        # code, and a batch of columns makes its records here, one call per record.
        row = _new_row(Row)
        attributes = row.__dict__
        attributes["_values"] = list(values)
        attributes["_fields"] = list(self.names)
        attributes["_from_dict"] = False
        attributes["_row_kind"] = _INSERT
        return row


_new_row = Row.__new__
_INSERT = RowKind.INSERT


def column_spec(type_info: TypeInformation | None) -> ColumnSpec | None:
    """The spec of a stream of ``type_info``; None when the type says nothing about
    fields (undeclared, pickled, or a type with no columnar form)."""
    if isinstance(type_info, RowTypeInfo):
        names = tuple(type_info._field_names)
        return ColumnSpec(
            names, _RowMaker(names), tuple(_dtype(t) for t in type_info.get_field_types())
        )
    if isinstance(type_info, TupleTypeInfo):
        types = type_info.get_field_types()
        return ColumnSpec(
            tuple(f"f{i}" for i in range(len(types))), None, tuple(_dtype(t) for t in types)
        )
    if isinstance(type_info, BasicTypeInfo):
        return ColumnSpec(None, None, (_dtype(type_info),))
    return None
