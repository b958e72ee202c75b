"""The functions that make the elements of ``from_collection`` what PyFlink's first
function sees of them under their declared type (built from the type by
``weir.common.typed_values.collection_conformer``): tuples become Rows of a Row type, Rows
get the type's names at every depth, maps come in the order of the Java ``HashMap`` they
are unpickled into. They run on the client, when the collection source is made; what a
declared type does between operators is ``weir.core.type_coders``.

They hold nothing of the user API, as they travel inside the source's payload: a Row is
recognised by what it does (``set_field_names``), not by its class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.java_hash_map import hash_map_order, table_size_for
from weir.core.key_groups import java_hash_code

__all__ = ["ListConformer", "MapConformer", "RowConformer", "TupleConformer"]

Conformer = Callable[[Any], Any]


def _is_row(value: Any) -> bool:
    return hasattr(type(value), "set_field_names")


class RowConformer:
    """A named Row type: a Row without names gets the type's; one named otherwise is
    rebuilt in the type's order; its fields are conformed by their types. ``make_row``
    (the Row class) turns tuples and lists into Rows too, as ``from_collection`` does."""

    def __init__(
        self,
        names: list[str],
        fields: list[Conformer | None],
        make_row: Callable[..., Any] | None = None,
    ) -> None:
        self._names = list(names)
        self._fields = [(i, f) for i, f in enumerate(fields) if f is not None]
        self._make_row = make_row

    def __call__(self, value: Any) -> Any:
        if not _is_row(value):
            if self._make_row is None or not isinstance(value, tuple | list):
                return value
            value = self._make_row(*value)
        names = value.__dict__.get("_fields")
        if names is None:
            value.set_field_names(self._names)
        elif names != self._names and set(self._names) <= set(names):
            # PyFlink writes the type's fields by name and reads them back in its order.
            kind = value.get_row_kind()
            value = type(value)(*value.get_fields_by_names(self._names))
            value.set_field_names(self._names)
            value.set_row_kind(kind)
        for i, field in self._fields:
            if i < len(value):
                value[i] = field(value[i])
        return value


class TupleConformer:
    def __init__(self, fields: list[Conformer | None]) -> None:
        self._fields = fields

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, tuple | list) or _is_row(value):
            return value
        conformed = [v if f is None else f(v) for v, f in zip(value, self._fields, strict=False)]
        return type(value)(conformed + list(value[len(self._fields) :]))


class ListConformer:
    def __init__(self, element: Conformer) -> None:
        self._element = element

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, list | tuple) or _is_row(value):
            return value
        return type(value)(self._element(v) for v in value)


class MapConformer:
    """A map comes in the order of the Java HashMap it travels through: one ``new
    HashMap<>(size)`` filled in its own order after an operator; from ``from_collection``,
    first the one Pyrolite unpickles it into, filled in reverse."""

    def __init__(self, key_type: str, value: Conformer | None, from_collection: bool) -> None:
        self._key_type = key_type
        self._hash_code = java_hash_code(key_type)
        self._value = value
        self._from_collection = from_collection

    def __getstate__(self) -> dict[str, Any]:
        return {"key_type": self._key_type, "value": self._value, "coll": self._from_collection}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["key_type"], state["value"], state["coll"])  # type: ignore[misc]

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        keys = list(value)
        hash_code = self._hash_code
        if hash_code is not None and len(keys) > 1:
            try:
                if self._from_collection:
                    keys = hash_map_order(keys[::-1], hash_code)
                keys = hash_map_order(keys, hash_code, table_size_for(len(keys)))
            except (TypeError, ValueError, OverflowError):
                keys = list(value)  # keys not of the declared type: PyFlink would fail
        convert = self._value
        if convert is None:
            return {k: value[k] for k in keys}
        return {k: convert(value[k]) for k in keys}
