"""``CollectionSource``: the elements of a Python collection, read by one subtask."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import cloudpickle

from weir.common.typed_values import collection_conformer
from weir.common.typeinfo import (
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
)
from weir.common.types import Row
from weir.core.source import SourceReaderContext, SourceStateError
from weir.graph.user_code import shipping_user_modules

__all__ = ["CollectionSource"]


class CollectionReader:
    """Its position is the index of the next element to emit."""

    def __init__(self, elements: list[Any]) -> None:
        self._elements = elements
        self._position = 0

    def poll_batch(self, max_records: int) -> list[Any] | None:
        if self._position >= len(self._elements):
            return None
        batch = self._elements[self._position : self._position + max_records]
        self._position += len(batch)
        return batch

    def snapshot_state(self, checkpoint_id: int) -> int:
        return self._position

    def restore_state(self, state: int) -> None:
        if not isinstance(state, int) or not 0 <= state <= len(self._elements):
            msg = (
                f"CollectionSource: cannot restore position {state!r}: this reader has "
                f"{len(self._elements)} elements; the checkpoint belongs to another "
                "collection"
            )
            raise SourceStateError(msg)
        self._position = state

    def close(self) -> None:
        self._elements = []
        self._position = 0


_WIDTHS = {"Byte": 8, "Short": 16, "Integer": 32}


def _same(value: Any) -> Any:
    return value


def _narrowing(type_info: TypeInformation | None) -> Callable[[Any], Any] | None:
    """What PyFlink's collection source does to integers declared BYTE, SHORT or INT (also
    inside tuples, rows, lists and maps): Java's narrowing conversion, which keeps the low
    bits (40000 as a SHORT is -25536). ``None`` where the type declares no such integer."""
    if isinstance(type_info, BasicTypeInfo):
        bits = _WIDTHS.get(repr(type_info))
        if bits is None:
            return None
        half, whole = 1 << (bits - 1), 1 << bits

        def narrow_int(value: Any) -> Any:
            if type(value) is int and not -half <= value < half:
                return (value + half) % whole - half
            return value

        return narrow_int
    if isinstance(type_info, TupleTypeInfo | RowTypeInfo):
        fields = [_narrowing(t) for t in type_info.get_field_types()]
        if not any(fields):
            return None

        def narrow_fields(value: Any) -> Any:
            if isinstance(value, Row):
                row = copy.copy(value)
                for i, narrow in enumerate(fields[: len(row)]):
                    if narrow is not None:
                        row[i] = narrow(row[i])
                return row
            if isinstance(value, tuple | list):
                narrowed = [
                    v if narrow is None else narrow(v)
                    for v, narrow in zip(value, fields, strict=False)
                ]
                return type(value)(narrowed + list(value[len(fields) :]))
            return value

        return narrow_fields
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element_type = (
            type_info.elem_type
            if isinstance(type_info, ListTypeInfo)
            else type_info.get_component_type()
        )
        element = _narrowing(element_type)
        if element is None:
            return None
        return lambda value: (
            type(value)(element(v) for v in value) if isinstance(value, list | tuple) else value
        )
    if isinstance(type_info, MapTypeInfo):
        narrow_key = _narrowing(type_info._key_type_info)
        narrow_value = _narrowing(type_info._value_type_info)
        if narrow_key is None and narrow_value is None:
            return None
        key = narrow_key or _same
        item = narrow_value or _same
        return lambda value: (
            {key(k): item(v) for k, v in value.items()} if isinstance(value, dict) else value
        )
    return None


class CollectionSource:
    """The elements, pickled when the job is built (later changes to the collection do not
    show), emitted in order by subtask 0 (``from_collection`` runs it with parallelism 1).

    With a Row type, tuples, lists and dicts become Rows named by that type, as in PyFlink.
    """

    def __init__(self, elements: Iterable[Any], type_info: TypeInformation | None = None) -> None:
        values = list(elements)
        if isinstance(type_info, RowTypeInfo):
            values = [type_info.to_row(v) for v in values]
        narrow = _narrowing(type_info)
        if narrow is not None:
            values = [narrow(v) for v in values]
        conform = collection_conformer(type_info)
        if conform is not None:
            values = [conform(v) for v in values]
        self._count = len(values)
        with shipping_user_modules():
            self._blob = cloudpickle.dumps(values)

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context: SourceReaderContext) -> CollectionReader:
        if context.get_index_of_this_subtask() != 0:
            return CollectionReader([])
        return CollectionReader(cloudpickle.loads(self._blob))

    def __len__(self) -> int:
        return self._count

    def estimated_size_bytes(self) -> int:
        """The volume the source reads, for BATCH mode's parallelism: the elements' pickled
        size."""
        return len(self._blob)

    def __repr__(self) -> str:
        return f"CollectionSource({self._count} elements)"
