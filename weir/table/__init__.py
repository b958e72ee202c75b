"""The data types of the Table API that the file formats declare columns with (mirrors
``pyflink.table``'s ``DataTypes``); Weir has no Table API."""

from weir.table.types import DataTypes, Row, RowKind

__all__ = ["DataTypes", "Row", "RowKind"]
