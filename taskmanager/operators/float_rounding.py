"""FLOAT values as PyFlink carries them: 32 bits wide once serialised with their type.

PyFlink's FLOAT coder packs a value as a 32-bit float, so a Python function reading a
FLOAT that crossed a serialisation boundary sees it rounded to single precision
(``1.23`` arrives as ``1.2300000190734863``), while one chained to the function that
produced it sees the value as it was made. The boundaries, and what Weir does at each:

* a source's output (PyFlink's sources run in Java): every output of a source operator
  whose declared type holds a FLOAT is rounded;
* an edge between tasks (PyFlink fuses chained Python functions and serialises between
  the others): what an operator hands to its network writers is rounded, main output by
  the operator's declared type, a side output by its tag's;
* ``execute_and_collect()``: PyFlink's client reads a FLOAT back from Java as the
  decimal text Java prints (``String.valueOf``), so ``1/3`` arrives as ``0.33333334``.

``print()`` needs nothing here: it already prints a FLOAT as Java does.

Rounding works on a whole batch and only for declared types that hold a FLOAT (the
``single_precision_spec`` of ``weir.common.typeinfo``): a batch of plain FLOATs is one
``array('f')`` round trip; composite records are rebuilt, never changed in place (the
same record may also have gone to a chained operator). A value that is not a number
(a function that declared FLOAT and returned something else) is left as it is.
"""

from __future__ import annotations

import copy
import math
import struct
from array import array
from collections.abc import Callable
from typing import Any

from weir.taskmanager.operators.print_format import java_float

__all__ = ["collected_floats", "single_precision_rounding"]

Spec = tuple[Any, ...]
Batch = Callable[[list[Any]], list[Any]]

_SINGLE = struct.Struct("f")


def _to_single(value: Any) -> Any:
    if value is None:
        return value
    try:
        return _SINGLE.unpack(_SINGLE.pack(value))[0]
    except OverflowError:  # beyond a float's range: infinity, as a C cast gives
        return math.copysign(math.inf, value)
    except (struct.error, TypeError):
        return value


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


def _round_floats(batch: list[Any]) -> list[Any]:
    try:
        return array("f", batch).tolist()
    except (TypeError, OverflowError):  # a None, or a value that is no number
        return [_to_single(v) for v in batch]


def single_precision_rounding(spec: Spec | None) -> Batch | None:
    """A new batch with every FLOAT of its records (of the type ``spec`` describes)
    rounded to single precision; None when the type holds no FLOAT."""
    if spec is None:
        return None
    if spec[0] == "float":
        return _round_floats
    convert = _converter(spec, _to_single)
    if convert is None:
        return None
    return lambda batch: [convert(v) for v in batch]


def collected_floats(spec: Spec | None) -> Batch | None:
    """A new batch with every FLOAT as ``execute_and_collect()`` returns it in PyFlink;
    None when the type holds no FLOAT."""
    convert = _converter(spec, _as_java_reads_it)
    if convert is None:
        return None
    return lambda batch: [convert(v) for v in batch]
