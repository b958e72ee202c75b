"""What a declared type does to the values that travel under it, as PyFlink's coders do.

``type_coder(type)`` builds the coder of an operator's output (``weir.core.type_coders``):
where PyFlink serialises the output with its type, the next function sees what the type's
coder reads back (Rows named by the type, maps in the order of the Java ``HashMap`` they
travel through, FLOATs of 32 bits, ...) and a value the coder cannot write fails the job.

``collection_conformer(type)`` is what ``from_collection`` does to its elements:
Pyrolite unpickles the collection's dicts into a ``HashMap`` in reverse order, which is then
copied into a ``new HashMap<>(size)``, and tuples stand for Rows, which PyFlink turns into
Rows of the type (``weir.core.typed_values``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from weir.common.types import Row
from weir.core import type_coders as tc
from weir.core.key_groups import java_hash_code
from weir.core.typed_values import ListConformer, MapConformer, RowConformer, TupleConformer

__all__ = ["collection_conformer", "declared_text", "type_coder"]

# PyFlink's names of the basic types (Types.LONG() is BasicTypeInfo "Long").
_TYPES_NAME = {
    "String": "STRING",
    "Byte": "BYTE",
    "Boolean": "BOOLEAN",
    "Short": "SHORT",
    "Integer": "INT",
    "Long": "LONG",
    "Float": "FLOAT",
    "Double": "DOUBLE",
    "Char": "CHAR",
    "BigInteger": "BIG_INT",
    "BigDecimal": "BIG_DEC",
    "Instant": "INSTANT",
}
_INTEGER_BITS = {"Byte": 8, "Short": 16, "Integer": 32, "Long": 64, "BigInteger": 64}
_SQL_TIME_NAME = {"Date": "SQL_DATE", "Time": "SQL_TIME", "Timestamp": "SQL_TIMESTAMP"}


def type_coder(
    type_info: TypeInformation | None, *, strict: bool = True, what: str = "output"
) -> tc.DeclaredTypeCoder | None:
    """The coder of records of ``type_info`` where PyFlink serialises them; None for an
    undeclared (pickled) type. ``strict=False`` for a source's output, which PyFlink makes
    in Java: what does not fit is left as it is. ``what`` names the output in errors."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return None
    if not strict and not _reshapes(type_info):
        return None  # a value that fits comes back as it is, and none is refused
    root = _coder(type_info)
    if root.passes_everything:
        return None
    return tc.DeclaredTypeCoder(root, declared_text(type_info), strict=strict, what=what)


def _reshapes(type_info: TypeInformation) -> bool:
    """Whether the coder of ``type_info`` gives back another value for one that fits the
    type: a Row (named by the type), a map (in Java HashMap order) or a FLOAT (32 bits),
    at any depth."""
    if isinstance(type_info, RowTypeInfo | MapTypeInfo):
        return True
    if isinstance(type_info, BasicTypeInfo):
        return repr(type_info) == "Float"
    if isinstance(type_info, TupleTypeInfo):
        return any(_reshapes(t) for t in type_info.get_field_types())
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        return _reshapes(_element_type(type_info))
    return False


def _element_type(type_info: ListTypeInfo | PrimitiveArrayTypeInfo) -> TypeInformation:
    if isinstance(type_info, ListTypeInfo):
        return type_info.elem_type
    return type_info.get_component_type()


def _coder(type_info: TypeInformation) -> tc.TypeCoder:
    """PyFlink's coder of ``type_info`` (``coders.from_type_info_proto``)."""
    if isinstance(type_info, BasicTypeInfo):
        name = repr(type_info)
        if name in _INTEGER_BITS:
            return tc.IntegerCoder(_INTEGER_BITS[name])
        simple: dict[str, type[tc.TypeCoder]] = {
            "String": tc.StringCoder,
            "Char": tc.StringCoder,
            "Boolean": tc.BooleanCoder,
            "Float": tc.FloatCoder,
            "Double": tc.DoubleCoder,
        }
        return simple.get(name, tc.PassCoder)()
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element_type = _element_type(type_info)
        nullable = isinstance(type_info, BasicArrayTypeInfo | ObjectArrayTypeInfo)
        if not nullable and repr(element_type) == "Byte":
            return tc.BytesCoder()  # PyFlink's BinaryCoder: bytes, not a list
        return tc.ListCoder(_coder(element_type), nullable)
    if isinstance(type_info, MapTypeInfo):
        key_type = type_info._key_type_info
        return tc.MapCoder(_coder(key_type), _coder(type_info._value_type_info), repr(key_type))
    if isinstance(type_info, TupleTypeInfo):
        return tc.TupleCoder([_coder(t) for t in type_info.get_field_types()])
    if isinstance(type_info, RowTypeInfo):
        return tc.RowCoder(
            list(type_info._field_names), [_coder(t) for t in type_info.get_field_types()]
        )
    return tc.PassCoder()


def declared_text(type_info: TypeInformation) -> str:
    """``type_info`` as a program declares it: ``Types.TUPLE([Types.STRING(), Types.INT()])``."""
    if isinstance(type_info, BasicTypeInfo):
        return f"Types.{_TYPES_NAME.get(repr(type_info), repr(type_info))}()"
    if isinstance(type_info, SqlTimeTypeInfo):
        return f"Types.{_SQL_TIME_NAME.get(type_info._name, type_info._name)}()"
    if isinstance(type_info, PickledBytesTypeInfo):
        return "Types.PICKLED_BYTE_ARRAY()"
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        kind = (
            "LIST"
            if isinstance(type_info, ListTypeInfo)
            else "OBJECT_ARRAY"
            if isinstance(type_info, ObjectArrayTypeInfo)
            else "BASIC_ARRAY"
            if isinstance(type_info, BasicArrayTypeInfo)
            else "PRIMITIVE_ARRAY"
        )
        return f"Types.{kind}({declared_text(_element_type(type_info))})"
    if isinstance(type_info, MapTypeInfo):
        key = declared_text(type_info._key_type_info)
        return f"Types.MAP({key}, {declared_text(type_info._value_type_info)})"
    if isinstance(type_info, TupleTypeInfo):
        fields = ", ".join(declared_text(t) for t in type_info.get_field_types())
        return f"Types.TUPLE([{fields}])"
    if isinstance(type_info, RowTypeInfo):
        fields = ", ".join(declared_text(t) for t in type_info.get_field_types())
        if not type_info._named:
            return f"Types.ROW([{fields}])"
        return f"Types.ROW_NAMED({list(type_info._field_names)!r}, [{fields}])"
    return repr(type_info)


def collection_conformer(type_info: TypeInformation | None) -> Callable[[Any], Any] | None:
    """The function that makes an element of ``from_collection`` of ``type_info`` what
    PyFlink's first function would see, or None when nothing would change."""
    if isinstance(type_info, RowTypeInfo):
        fields = [collection_conformer(t) for t in type_info.get_field_types()]
        return RowConformer(type_info._field_names, fields, Row)
    if isinstance(type_info, TupleTypeInfo):
        fields = [collection_conformer(t) for t in type_info.get_field_types()]
        return TupleConformer(fields) if any(fields) else None
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element = collection_conformer(_element_type(type_info))
        return None if element is None else ListConformer(element)
    if isinstance(type_info, MapTypeInfo):
        key_type = repr(type_info._key_type_info)
        value = collection_conformer(type_info._value_type_info)
        if java_hash_code(key_type) is None and value is None:
            return None
        return MapConformer(key_type, value, from_collection=True)
    return None
