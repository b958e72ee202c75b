"""Logical data types (mirrors ``pyflink.table.types``): ``DataTypes`` and the types it
makes, as the file formats declare their columns with them.

Only the types: Weir has no Table API. A ``RowType`` becomes the DataStream type of the
records a format produces through ``to_type_info`` (``DataTypes.INT()`` a
``Types.INT()``, a ``RowType`` a ``Types.ROW_NAMED``), as PyFlink turns a format's row
type into the records' type::

    row_type = DataTypes.ROW([
        DataTypes.FIELD("auction", DataTypes.BIGINT()),
        DataTypes.FIELD("price", DataTypes.DOUBLE()),
    ])
    to_type_info(row_type)  # Types.ROW_NAMED(["auction", "price"], [Types.LONG(), Types.DOUBLE()])
"""

from __future__ import annotations

from collections.abc import Iterator
from copy import copy
from typing import Any

from weir.common.typeinfo import TypeInformation, Types
from weir.common.types import Row, RowKind

__all__ = [
    "ArrayType",
    "AtomicType",
    "BigIntType",
    "BooleanType",
    "CharType",
    "DataType",
    "DataTypes",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FloatType",
    "FractionalType",
    "IntType",
    "IntegralType",
    "NumericType",
    "Row",
    "RowField",
    "RowKind",
    "RowType",
    "SmallIntType",
    "TimestampType",
    "TinyIntType",
    "VarCharType",
    "to_type_info",
]

_MAX_LENGTH = 0x7FFFFFFF


class DataType:
    """The data type of a value: a logical type and whether it may be null (None)."""

    def __init__(self, nullable: bool = True) -> None:
        self._nullable = nullable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self._nullable).lower()})"

    def __str__(self) -> str:
        return self.type_name()

    def __hash__(self) -> int:
        return hash(str(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.__dict__ == other.__dict__

    def not_null(self) -> DataType:
        cp = copy(self)
        cp._nullable = False
        return cp

    def nullable(self) -> DataType:
        cp = copy(self)
        cp._nullable = True
        return cp

    @classmethod
    def type_name(cls) -> str:
        return cls.__name__[:-4].upper()


class AtomicType(DataType):
    """Every type that is not an array, a map or a row."""


class NumericType(AtomicType):
    """The numbers."""


class IntegralType(NumericType):
    """Whole numbers."""


class FractionalType(NumericType):
    """Numbers with a fraction."""


class BooleanType(AtomicType):
    """SQL BOOLEAN."""


class TinyIntType(IntegralType):
    """SQL TINYINT: one byte, -128 to 127."""


class SmallIntType(IntegralType):
    """SQL SMALLINT: two bytes."""


class IntType(IntegralType):
    """SQL INT: four bytes."""


class BigIntType(IntegralType):
    """SQL BIGINT: eight bytes."""


class FloatType(FractionalType):
    """SQL FLOAT: single precision."""


class DoubleType(FractionalType):
    """SQL DOUBLE: double precision."""


class DecimalType(FractionalType):
    """SQL DECIMAL(precision, scale): ``decimal.Decimal`` values of at most ``precision``
    digits, ``scale`` of them after the point."""

    def __init__(self, precision: int = 10, scale: int = 0, nullable: bool = True) -> None:
        super().__init__(nullable)
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            msg = (
                f"DECIMAL({precision}, {scale}): the precision must be 1 to 38 and the scale "
                "0 to the precision"
            )
            raise ValueError(msg)
        self.precision = precision
        self.scale = scale
        self.has_precision_info = True

    def __repr__(self) -> str:
        return f"DecimalType({self.precision}, {self.scale}, {str(self._nullable).lower()})"


class CharType(AtomicType):
    """SQL CHAR(n)."""

    def __init__(self, length: int = 1, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.length = length

    def __repr__(self) -> str:
        return f"CharType({self.length}, {str(self._nullable).lower()})"


class VarCharType(AtomicType):
    """SQL VARCHAR(n); ``DataTypes.STRING()`` is the longest, VARCHAR(2147483647)."""

    def __init__(self, length: int = 1, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.length = length

    def __repr__(self) -> str:
        return f"VarCharType({self.length}, {str(self._nullable).lower()})"


class DateType(AtomicType):
    """SQL DATE: ``datetime.date`` values."""


class TimestampType(AtomicType):
    """SQL TIMESTAMP(p) WITHOUT TIME ZONE: ``datetime.datetime`` values without a zone,
    ``precision`` digits of fractional seconds (0 to 9, default 6)."""

    def __init__(self, precision: int = 6, nullable: bool = True) -> None:
        super().__init__(nullable)
        if not 0 <= precision <= 9:
            msg = f"TIMESTAMP({precision}): the precision must be 0 to 9"
            raise ValueError(msg)
        self.precision = precision

    def __repr__(self) -> str:
        return f"TimestampType({self.precision}, {str(self._nullable).lower()})"


class ArrayType(DataType):
    """SQL ARRAY of ``element_type``: lists."""

    def __init__(self, element_type: DataType, nullable: bool = True) -> None:
        if not isinstance(element_type, DataType):
            msg = f"ARRAY: the element type must be a DataType; got {element_type!r}"
            raise TypeError(msg)
        super().__init__(nullable)
        self.element_type = element_type

    def __repr__(self) -> str:
        return f"ArrayType({self.element_type!r}, {str(self._nullable).lower()})"


class RowField:
    """A named field of a ``RowType``."""

    def __init__(self, name: str, data_type: DataType, description: str | None = None) -> None:
        if not isinstance(name, str):
            msg = f"a field name must be a str; got {name!r}"
            raise TypeError(msg)
        if not isinstance(data_type, DataType):
            msg = f"the type of field {name!r} must be a DataType; got {data_type!r}"
            raise TypeError(msg)
        self.name = name
        self.data_type = data_type
        self.description = "..." if description is None else description

    def __repr__(self) -> str:
        return f"RowField({self.name}, {self.data_type!r}, {self.description})"

    def __str__(self) -> str:
        return f"RowField({self.name}, {self.data_type})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, type(self)) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.name, str(self.data_type)))


class RowType(DataType):
    """A row of named fields; iterating it gives its ``RowField``s, which can also be
    taken by name or position."""

    def __init__(self, fields: list[RowField] | None = None, nullable: bool = True) -> None:
        super().__init__(nullable)
        self.fields: list[RowField] = list(fields or [])
        for field in self.fields:
            if not isinstance(field, RowField):
                msg = f"a RowType is made of RowFields (DataTypes.FIELD); got {field!r}"
                raise TypeError(msg)
        self.names = [f.name for f in self.fields]

    def add(self, field: RowField | str, data_type: DataType | None = None) -> RowType:
        if isinstance(field, RowField):
            self.fields.append(field)
            self.names.append(field.name)
            return self
        if data_type is None:
            msg = "RowType.add: give the DataType of the field named by a string"
            raise ValueError(msg)
        return self.add(RowField(field, data_type))

    def __iter__(self) -> Iterator[RowField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, key: str | int | slice) -> Any:
        if isinstance(key, str):
            for field in self.fields:
                if field.name == key:
                    return field
            msg = f"No RowField named {key}"
            raise KeyError(msg)
        if isinstance(key, int):
            try:
                return self.fields[key]
            except IndexError:
                msg = "RowType index out of range"
                raise IndexError(msg) from None
        if isinstance(key, slice):
            return RowType(self.fields[key])
        msg = "RowType keys should be strings, integers or slices"
        raise TypeError(msg)

    def __repr__(self) -> str:
        return f"RowType({','.join(repr(f) for f in self.fields)})"

    def field_names(self) -> list[str]:
        return list(self.names)

    def field_types(self) -> list[DataType]:
        return [f.data_type for f in self.fields]


class DataTypes:
    """The data types, by their SQL names (PyFlink's ``DataTypes``)::

    DataTypes.ROW([
        DataTypes.FIELD("id", DataTypes.INT()),
        DataTypes.FIELD("name", DataTypes.STRING()),
    ])
    """

    @staticmethod
    def BOOLEAN(nullable: bool = True) -> BooleanType:
        return BooleanType(nullable)

    @staticmethod
    def TINYINT(nullable: bool = True) -> TinyIntType:
        return TinyIntType(nullable)

    @staticmethod
    def SMALLINT(nullable: bool = True) -> SmallIntType:
        return SmallIntType(nullable)

    @staticmethod
    def INT(nullable: bool = True) -> IntType:
        return IntType(nullable)

    @staticmethod
    def BIGINT(nullable: bool = True) -> BigIntType:
        return BigIntType(nullable)

    @staticmethod
    def FLOAT(nullable: bool = True) -> FloatType:
        return FloatType(nullable)

    @staticmethod
    def DOUBLE(nullable: bool = True) -> DoubleType:
        return DoubleType(nullable)

    @staticmethod
    def DECIMAL(precision: int, scale: int, nullable: bool = True) -> DecimalType:
        return DecimalType(precision, scale, nullable)

    @staticmethod
    def CHAR(length: int, nullable: bool = True) -> CharType:
        return CharType(length, nullable)

    @staticmethod
    def VARCHAR(length: int, nullable: bool = True) -> VarCharType:
        return VarCharType(length, nullable)

    @staticmethod
    def STRING(nullable: bool = True) -> VarCharType:
        return VarCharType(_MAX_LENGTH, nullable)

    @staticmethod
    def DATE(nullable: bool = True) -> DateType:
        return DateType(nullable)

    @staticmethod
    def TIMESTAMP(precision: int = 6, nullable: bool = True) -> TimestampType:
        return TimestampType(precision, nullable)

    @staticmethod
    def ARRAY(element_type: DataType, nullable: bool = True) -> ArrayType:
        return ArrayType(element_type, nullable)

    @staticmethod
    def ROW(row_fields: list[RowField] | None = None, nullable: bool = True) -> RowType:
        return RowType(list(row_fields or []), nullable)

    @staticmethod
    def FIELD(name: str, data_type: DataType, description: str | None = None) -> RowField:
        return RowField(name, data_type, description)


def to_type_info(data_type: DataType) -> TypeInformation:
    """The DataStream type of values of ``data_type`` (a ``RowType`` gives
    ``Types.ROW_NAMED``; an ARRAY ``Types.LIST``)."""
    if isinstance(data_type, RowType):
        return Types.ROW_NAMED(
            data_type.field_names(), [to_type_info(t) for t in data_type.field_types()]
        )
    if isinstance(data_type, ArrayType):
        return Types.LIST(to_type_info(data_type.element_type))
    simple = _SIMPLE_TYPE_INFOS.get(type(data_type))
    if simple is None:
        msg = f"{data_type!r} has no DataStream type in Weir; use one of {_supported()}"
        raise TypeError(msg)
    return simple()


_SIMPLE_TYPE_INFOS: dict[type[DataType], Any] = {
    BooleanType: Types.BOOLEAN,
    TinyIntType: Types.BYTE,
    SmallIntType: Types.SHORT,
    IntType: Types.INT,
    BigIntType: Types.LONG,
    FloatType: Types.FLOAT,
    DoubleType: Types.DOUBLE,
    DecimalType: Types.BIG_DEC,
    CharType: Types.STRING,
    VarCharType: Types.STRING,
    DateType: Types.SQL_DATE,
    TimestampType: Types.SQL_TIMESTAMP,
}


def _supported() -> str:
    return ", ".join(t.type_name() for t in _SIMPLE_TYPE_INFOS) + ", ARRAY, ROW"
