"""``Types`` and ``TypeInformation``: PyFlink's type declarations, used here as serialization hints.

A declared type chooses the serializer an edge tries first (``SerializerKind``): records
made of Python primitives, and tuples, lists and maps of them, go through ``marshal``;
Rows, pickled objects and undeclared types go through pickle. The choice is only a hint:
``weir.core.serializers`` falls back to pickle for any record marshal refuses.
"""

from __future__ import annotations

from typing import Any

from weir.common.types import Row
from weir.core.job_graph import SerializerKind

__all__ = [
    "BasicArrayTypeInfo",
    "BasicTypeInfo",
    "ListTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RowTypeInfo",
    "SqlTimeTypeInfo",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
    "read_back",
    "serializer_kind_of",
    "single_precision_spec",
]


class TypeInformation:
    """The type of the records of a stream."""

    def _marshallable(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(repr(self))

    def __repr__(self) -> str:
        return type(self).__name__


class BasicTypeInfo(TypeInformation):
    """A primitive: STRING, BYTE, BOOLEAN, SHORT, INT, LONG, FLOAT, DOUBLE, CHAR, BIG_INT,
    BIG_DEC or INSTANT."""

    _MARSHALLABLE = frozenset(
        {
            "String",
            "Byte",
            "Boolean",
            "Short",
            "Integer",
            "Long",
            "Float",
            "Double",
            "Char",
            "BigInteger",
        }
    )

    def __init__(self, name: str) -> None:
        self._name = name

    def _marshallable(self) -> bool:
        return self._name in self._MARSHALLABLE

    def __repr__(self) -> str:
        return self._name

    @staticmethod
    def STRING_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("String")

    @staticmethod
    def BOOLEAN_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Boolean")

    @staticmethod
    def BYTE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Byte")

    @staticmethod
    def SHORT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Short")

    @staticmethod
    def INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Integer")

    @staticmethod
    def LONG_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Long")

    @staticmethod
    def FLOAT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Float")

    @staticmethod
    def DOUBLE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Double")

    @staticmethod
    def CHAR_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Char")

    @staticmethod
    def BIG_INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("BigInteger")

    @staticmethod
    def BIG_DEC_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("BigDecimal")

    @staticmethod
    def INSTANT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo("Instant")


class SqlTimeTypeInfo(TypeInformation):
    """java.sql Date, Time and Timestamp: Python ``date``, ``time`` and ``datetime``."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"{self._name}TypeInfo"  # PyFlink's DateTypeInfo, TimeTypeInfo, ...

    @staticmethod
    def DATE() -> SqlTimeTypeInfo:
        return SqlTimeTypeInfo("Date")

    @staticmethod
    def TIME() -> SqlTimeTypeInfo:
        return SqlTimeTypeInfo("Time")

    @staticmethod
    def TIMESTAMP() -> SqlTimeTypeInfo:
        return SqlTimeTypeInfo("Timestamp")


class PickledBytesTypeInfo(TypeInformation):
    """Any Python object, pickled (the default when no type is declared)."""

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"

    @staticmethod
    def PICKLED_BYTE_ARRAY_TYPE_INFO() -> PickledBytesTypeInfo:
        return PickledBytesTypeInfo()


class PrimitiveArrayTypeInfo(TypeInformation):
    def __init__(self, element_type: TypeInformation) -> None:
        self._element_type = element_type

    def get_component_type(self) -> TypeInformation:
        return self._element_type

    def _marshallable(self) -> bool:
        return self._element_type._marshallable()

    def __repr__(self) -> str:
        return f"PrimitiveArrayTypeInfo<{self._element_type!r}>"


class BasicArrayTypeInfo(PrimitiveArrayTypeInfo):
    def __repr__(self) -> str:
        return f"BasicArrayTypeInfo<{self._element_type!r}>"


class ObjectArrayTypeInfo(PrimitiveArrayTypeInfo):
    def __repr__(self) -> str:
        return f"ObjectArrayTypeInfo<{self._element_type!r}>"


class ListTypeInfo(TypeInformation):
    def __init__(self, element_type: TypeInformation) -> None:
        self.elem_type = element_type

    def _marshallable(self) -> bool:
        return self.elem_type._marshallable()

    def __repr__(self) -> str:
        return f"ListTypeInfo<{self.elem_type!r}>"


class MapTypeInfo(TypeInformation):
    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation) -> None:
        self._key_type_info = key_type_info
        self._value_type_info = value_type_info

    def _marshallable(self) -> bool:
        return self._key_type_info._marshallable() and self._value_type_info._marshallable()

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info!r}, {self._value_type_info!r}>"


class TupleTypeInfo(TypeInformation):
    def __init__(self, field_types: list[TypeInformation]) -> None:
        self._field_types = list(field_types)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def get_arity(self) -> int:
        return len(self._field_types)

    def _marshallable(self) -> bool:
        return all(t._marshallable() for t in self._field_types)

    def __repr__(self) -> str:
        return "TupleTypeInfo({})".format(", ".join(repr(t) for t in self._field_types))


class RowTypeInfo(TypeInformation):
    """Records are ``Row`` objects with these field types (and names: ``f0``, ``f1``, ... unless
    named)."""

    def __init__(
        self, field_types: list[TypeInformation], field_names: list[str] | None = None
    ) -> None:
        self._field_types = list(field_types)
        self._named = field_names is not None
        """Named by the program (``Types.ROW_NAMED``): the names print with the types."""
        if field_names is None:
            field_names = [f"f{i}" for i in range(len(self._field_types))]
        elif len(field_names) != len(self._field_types):
            msg = (
                f"a Row type needs one name per field type: got {len(field_names)} names "
                f"for {len(self._field_types)} types"
            )
            raise ValueError(msg)
        self._field_names = list(field_names)

    def get_field_names(self) -> list[str]:
        # PyFlink's asks Java for the names of an unnamed Row type and keeps them, so the
        # type prints with its names from then on.
        self._named = True
        return list(self._field_names)

    def get_field_index(self, field_name: str) -> int:
        return self._field_names.index(field_name)

    def get_field_types(self) -> list[TypeInformation]:
        return list(self._field_types)

    def get_field_type(self, field_name: str) -> TypeInformation:
        return self._field_types[self.get_field_index(field_name)]

    def get_arity(self) -> int:
        return len(self._field_types)

    def to_row(self, value: Any) -> Any:
        """``value`` (a tuple, list, dict or Row) as a Row named by this type."""
        if isinstance(value, Row):
            return value
        if isinstance(value, dict):
            values = [value.get(name) for name in self._field_names]
        elif isinstance(value, tuple | list):
            values = list(value)
        else:
            return value
        row = Row(*values)
        row.set_field_names(self._field_names)
        return row

    def __eq__(self, other: object) -> bool:
        # As PyFlink's: the field types decide, not the names.
        return isinstance(other, RowTypeInfo) and self._field_types == other._field_types

    def __hash__(self) -> int:
        return hash(tuple(self._field_types))

    def __repr__(self) -> str:
        if not self._named:
            return "RowTypeInfo({})".format(", ".join(repr(t) for t in self._field_types))
        inner = ", ".join(
            f"{n}: {t!r}" for n, t in zip(self._field_names, self._field_types, strict=True)
        )
        return f"RowTypeInfo({inner})"


class Types:
    """PyFlink's constructors of TypeInformation::

    Types.TUPLE([Types.STRING(), Types.INT()])
    """

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo.STRING_TYPE_INFO()

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo.BYTE_TYPE_INFO()

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo.BOOLEAN_TYPE_INFO()

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo.SHORT_TYPE_INFO()

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo.INT_TYPE_INFO()

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo.LONG_TYPE_INFO()

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo.FLOAT_TYPE_INFO()

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo.DOUBLE_TYPE_INFO()

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo.CHAR_TYPE_INFO()

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo.BIG_INT_TYPE_INFO()

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo.BIG_DEC_TYPE_INFO()

    @staticmethod
    def INSTANT() -> TypeInformation:
        return BasicTypeInfo.INSTANT_TYPE_INFO()

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return SqlTimeTypeInfo.DATE()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return SqlTimeTypeInfo.TIME()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return SqlTimeTypeInfo.TIMESTAMP()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo.PICKLED_BYTE_ARRAY_TYPE_INFO()

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> RowTypeInfo:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> RowTypeInfo:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TupleTypeInfo:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


def read_back(type_info: TypeInformation) -> TypeInformation:
    """``type_info`` as PyFlink's ``get_type()`` returns it, rebuilt from the Java type: the
    same type, with every Row type in it named (``f0``, ``f1``, ... where the program gave
    no names), so it prints with its names."""
    if isinstance(type_info, RowTypeInfo):
        return RowTypeInfo(
            [read_back(t) for t in type_info._field_types], list(type_info._field_names)
        )
    if isinstance(type_info, TupleTypeInfo):
        return TupleTypeInfo([read_back(t) for t in type_info._field_types])
    if isinstance(type_info, ListTypeInfo):
        return ListTypeInfo(read_back(type_info.elem_type))
    if isinstance(type_info, MapTypeInfo):
        return MapTypeInfo(
            read_back(type_info._key_type_info), read_back(type_info._value_type_info)
        )
    if isinstance(type_info, ObjectArrayTypeInfo):
        return ObjectArrayTypeInfo(read_back(type_info._element_type))
    return type_info


def serializer_kind_of(type_info: TypeInformation | None) -> SerializerKind:
    """The serializer an edge carrying records of ``type_info`` tries first."""
    if type_info is not None and type_info._marshallable():
        return SerializerKind.MARSHAL
    return SerializerKind.PICKLE


def key_type_name(type_info: TypeInformation | None) -> str:
    """How a key of this declared type is hashed to its key group and sorted (see
    ``weir.core.key_groups.PyFlinkKeyHasher``): a basic type by name (``"String"``), a TUPLE
    or ROW type by its field types (``"Tuple<String, Integer>"``, ``"Row<Long,
    Tuple<String>>"``), as the Java objects PyFlink makes of them hash; anything else (or no
    declared type) ``"pickled"``, by its pickled bytes."""
    if isinstance(type_info, BasicTypeInfo):
        return repr(type_info)
    if isinstance(type_info, TupleTypeInfo | RowTypeInfo):
        kind = "Row" if isinstance(type_info, RowTypeInfo) else "Tuple"
        fields = ", ".join(key_type_name(t) for t in type_info.get_field_types())
        return f"{kind}<{fields}>"
    return "pickled"


def single_precision_spec(type_info: TypeInformation | None) -> tuple[Any, ...] | None:
    """Where a record of this type holds FLOAT values, as plain nested tuples the
    TaskManager understands without importing this module; None when it holds none.

    PyFlink serialises a FLOAT as 32 bits, so a value that crosses a serialisation
    boundary with its declared type comes back rounded to single precision; the
    TaskManager rounds at the same places (``weir.core.type_coders``), and converts what
    ``execute_and_collect()`` returns (``weir.taskmanager.operators.collected_floats``).
    ``("float",)`` is a FLOAT; ``("tuple", fields)`` and ``("row", fields)`` have one spec
    (or None) per field, ``("list", element)`` an array's or list's element, ``("map",
    key, value)`` a map's key and value.
    """
    if isinstance(type_info, BasicTypeInfo):
        return ("float",) if repr(type_info) == "Float" else None
    if isinstance(type_info, TupleTypeInfo | RowTypeInfo):
        fields = tuple(single_precision_spec(t) for t in type_info.get_field_types())
        if all(f is None for f in fields):
            return None
        return ("row" if isinstance(type_info, RowTypeInfo) else "tuple", fields)
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element = (
            type_info.elem_type if isinstance(type_info, ListTypeInfo) else type_info._element_type
        )
        spec = single_precision_spec(element)
        return None if spec is None else ("list", spec)
    if isinstance(type_info, MapTypeInfo):
        key = single_precision_spec(type_info._key_type_info)
        value = single_precision_spec(type_info._value_type_info)
        return None if key is None and value is None else ("map", key, value)
    return None


def print_format_spec(type_info: TypeInformation | None) -> tuple[Any, ...]:
    """How ``print()`` renders a record of this type, as plain nested tuples the
    TaskManager understands without importing this module.

    PyFlink turns an untyped (pickled) stream into ``str(value)`` before printing, while a
    typed stream becomes Java objects that print themselves: a Tuple as ``(a,1)``, a Row as
    ``+I[a, 1]``, a boolean as ``true``, a double as ``1.0E7``.
    """
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return ("pickled",)
    if isinstance(type_info, BasicTypeInfo):
        name = repr(type_info)
        if name in ("String", "Char"):
            return ("string",)
        if name == "Boolean":
            return ("boolean",)
        if name == "Float":
            return ("float",)
        if name == "Double":
            return ("double",)
        return ("plain",)
    if isinstance(type_info, SqlTimeTypeInfo) and type_info._name == "Timestamp":
        return ("timestamp",)
    if isinstance(type_info, SqlTimeTypeInfo) and type_info._name == "Time":
        return ("time",)
    if isinstance(type_info, TupleTypeInfo):
        return ("tuple", tuple(print_format_spec(t) for t in type_info.get_field_types()))
    if isinstance(type_info, RowTypeInfo):
        return ("row", tuple(print_format_spec(t) for t in type_info.get_field_types()))
    if isinstance(type_info, (ListTypeInfo, PrimitiveArrayTypeInfo)):
        element = getattr(type_info, "elem_type", None) or getattr(type_info, "_element_type", None)
        return ("list", print_format_spec(element))
    if isinstance(type_info, MapTypeInfo):
        return (
            "map",
            print_format_spec(type_info._key_type_info),
            print_format_spec(type_info._value_type_info),
        )
    return ("plain",)
