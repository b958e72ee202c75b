"""FLOAT values as PyFlink's ``execute_and_collect()`` returns them: its client reads a
FLOAT back from Java as the decimal text Java prints (``String.valueOf``), so ``1/3``
arrives as ``0.33333334``. (Where a FLOAT is rounded to 32 bits on its way between
functions is ``weir.graph.coded_outputs``' business, and the rounding
``weir.core.type_coders``'.)

Only declared types that hold a FLOAT are converted (the ``single_precision_spec`` of
``weir.common.typeinfo``); composite records are rebuilt, never changed in place. A value
that is not a number is left as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from weir.taskmanager.operators.print_format import java_float

__all__ = ["collected_floats"]

Spec = tuple[Any, ...]
Batch = Callable[[list[Any]], list[Any]]


def _as_java_reads_it(value: Any) -> Any:
    """A FLOAT as PyFlink's collect returns it: the text Java prints, read as a Python
    float."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return float(java_float(value))


def _converter(spec: Spec | None, scalar: Callable[[Any], Any]) -> Callable[[Any], Any] | None:
    """``scalar`` applied at every FLOAT of a value of the type ``spec`` describes."""
    if spec is None:
        return None
    kind = spec[0]
    if kind == "float":
        return scalar
    if kind in ("tuple", "row"):
        fields = [
            (i, convert)
            for i, field in enumerate(spec[1])
            if (convert := _converter(field, scalar)) is not None
        ]
        return _tuple_converter(fields) if kind == "tuple" else _row_converter(fields)
    if kind == "list":
        element = _converter(spec[1], scalar)
        if element is None:
            return None
        return lambda v: v if v is None else [element(x) for x in v]
    if kind == "map":
        key = _converter(spec[1], scalar) or _same
        value = _converter(spec[2], scalar) or _same
        return lambda v: v if v is None else {key(k): value(x) for k, x in v.items()}
    return None


def _same(value: Any) -> Any:
    return value


def _tuple_converter(fields: list[tuple[int, Callable[[Any], Any]]]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if not isinstance(value, tuple | list):
            return value
        items = list(value)
        for i, field in fields:
            if i < len(items):
                items[i] = field(items[i])
        return tuple(items) if isinstance(value, tuple) else items

    return convert


def _row_converter(fields: list[tuple[int, Callable[[Any], Any]]]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        if isinstance(value, tuple | list):  # a Row field of a tuple or list given as such
            return _tuple_converter(fields)(value)
        if value is None or not hasattr(value, "__setitem__"):
            return value
        row = copy.copy(value)  # a new Row, its names and kind kept
        for i, field in fields:
            if i < len(row):
                row[i] = field(row[i])
        return row

    return convert


def collected_floats(spec: Spec | None) -> Batch | None:
    """A new batch with every FLOAT as ``execute_and_collect()`` returns it in PyFlink;
    None when the type holds no FLOAT."""
    convert = _converter(spec, _as_java_reads_it)
    if convert is None:
        return None
    return lambda batch: [convert(v) for v in batch]
