"""What a declared type does to the values that travel under it, as PyFlink's coders do.

In PyFlink a value of a declared type is rebuilt from its type on the way to the next
function: a Row of a named Row type gets the type's names, at every depth (in Rows,
tuples, lists, arrays and map values), and a map comes back in the iteration order of the
Java ``HashMap`` it travelled through (``weir.core.java_hash_map``). ``conformer(type)``
gives the function that does the same to a value in place of that trip, or None when the
type has neither Rows nor maps in it; the functions themselves are in
``weir.core.typed_values``.

Two kinds of trip: an operator's output (a map is put into one ``new HashMap<>(size)`` in
its own order), and ``from_collection`` (Pyrolite unpickles the collection's dicts into a
``HashMap`` in reverse order, which is then copied into a ``new HashMap<>(size)``; there
tuples stand for Rows too, which PyFlink turns into Rows of the type).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.common.typeinfo import (
    ListTypeInfo,
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from weir.common.types import Row
from weir.core.key_groups import java_hash_code
from weir.core.typed_values import ListConformer, MapConformer, RowConformer, TupleConformer

__all__ = ["conformer"]


def conformer(
    type_info: TypeInformation | None, *, from_collection: bool = False
) -> Callable[[Any], Any] | None:
    """The function that makes a value of ``type_info`` what PyFlink's next function would
    see, or None when nothing would change."""
    if isinstance(type_info, RowTypeInfo):
        fields = [
            conformer(t, from_collection=from_collection) for t in type_info.get_field_types()
        ]
        return RowConformer(type_info._field_names, fields, Row if from_collection else None)
    if isinstance(type_info, TupleTypeInfo):
        fields = [
            conformer(t, from_collection=from_collection) for t in type_info.get_field_types()
        ]
        return TupleConformer(fields) if any(fields) else None
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element_type = (
            type_info.elem_type
            if isinstance(type_info, ListTypeInfo)
            else type_info.get_component_type()
        )
        element = conformer(element_type, from_collection=from_collection)
        return None if element is None else ListConformer(element)
    if isinstance(type_info, MapTypeInfo):
        key_type = repr(type_info._key_type_info)
        value = conformer(type_info._value_type_info, from_collection=from_collection)
        if java_hash_code(key_type) is None and value is None:
            return None
        return MapConformer(key_type, value, from_collection)
    return None
