"""The reduce functions behind ``KeyedStream.sum/min/max/min_by/max_by`` (PyFlink's semantics).

``sum``, ``min`` and ``max`` keep the first record of the key and replace only the given
field; ``min_by`` and ``max_by`` keep the whole record holding the smallest (largest)
value, the earliest one on ties. A plain number counts as one field, position 0.
"""

from __future__ import annotations

import enum
from typing import Any

from weir.common.types import Row
from weir.datastream.functions import ReduceFunction

__all__ = ["AccumulateReduceFunction", "AccumulateType"]


class AccumulateType(enum.Enum):
    MIN = 1
    MAX = 2
    MIN_BY = 3
    MAX_BY = 4
    SUM = 5


def _combine(kind: AccumulateType, old: Any, new: Any) -> Any:
    if kind is AccumulateType.MIN:
        return new if new < old else old
    if kind is AccumulateType.MAX:
        return new if new > old else old
    return old + new


def _copy_row(row: Row) -> Row:
    copy = Row(*row)
    fields = row.__dict__.get("_fields")
    if fields is not None:
        copy.set_field_names(list(fields))
    copy.set_row_kind(row.get_row_kind())
    return copy


class AccumulateReduceFunction(ReduceFunction):
    def __init__(self, position: int | str, kind: AccumulateType) -> None:
        if not isinstance(position, int | str):
            msg = (
                "The field position must be of int or str type to locate the value to "
                "calculate for min, max, min_by, max_by and sum. The given type is: "
                f"{type(position)}"
            )
            raise TypeError(msg)
        self._pos = position
        self._kind = kind

    @property
    def accumulate(self) -> tuple[str, int | str]:
        """``(kind, field)``: what the runtime computes over a batch of columns, with the
        semantics of ``reduce`` (``sum``, ``min``, ``max``, ``min_by`` or ``max_by``)."""
        return self._kind.name.lower(), self._pos

    def reduce(self, value1: Any, value2: Any) -> Any:
        pos, kind = self._pos, self._kind
        structured = isinstance(value2, tuple | list | Row)
        if kind is AccumulateType.MIN_BY:
            if structured:
                return value2 if value2[pos] < value1[pos] else value1
            return value2 if value2 < value1 else value1
        if kind is AccumulateType.MAX_BY:
            if structured:
                return value2 if value2[pos] > value1[pos] else value1
            return value2 if value2 > value1 else value1
        if isinstance(value2, Row):
            # A fresh Row, not value1 changed in place: value1 was already emitted downstream.
            result = _copy_row(value1)
            result[pos] = _combine(kind, value1[pos], value2[pos])
            return result
        if isinstance(value2, tuple | list):
            fields = list(value1)
            fields[pos] = _combine(kind, value1[pos], value2[pos])  # type: ignore[index]
            return tuple(fields) if isinstance(value2, tuple) else fields
        if pos != 0:
            msg = (
                f"The {pos} field selected on a basic type. A field expression on a basic "
                "type can only select the 0th field (which means selecting the entire "
                "basic type)."
            )
            raise TypeError(msg)
        return _combine(kind, value1, value2)
