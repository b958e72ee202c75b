"""Rendering records for ``print()`` exactly as PyFlink prints them.

The API hands a format spec (``weir.common.typeinfo.print_format_spec``): ``("pickled",)``
for untyped streams, which PyFlink prints as ``str(value)``, or the shape of a typed
stream, whose records PyFlink converts to Java objects that print Java's way.
"""

from __future__ import annotations

import datetime
import math
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from weir.core.errors import DeclaredTypeError

Renderer = Callable[[Any], str]

_INF = float("inf")
_ROW_KIND_SHORT = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}


def java_double(value: float) -> str:
    """Java's Double.toString: positional between 1e-3 and 1e7, else ``d.dddE±n``, with
    the shortest digits that read back as the same double."""
    if math.isnan(value):
        return "NaN"
    if value in (_INF, -_INF):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # Python is positional in this range too
    shortest = Decimal(repr(float(value)))
    digits = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{shortest.adjusted()}"


def _plain(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def _double(value: Any) -> str:
    """A DOUBLE field: an int given for it is a double once Java holds it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return java_double(float(value))
    return _plain(value)


def java_float(value: float) -> str:
    """Java's Float.toString of ``value`` rounded to 32 bits: the shortest digits that
    read back as the same float, positional between 1e-3 and 1e7."""
    (single,) = struct.unpack(">f", struct.pack(">f", value))
    if math.isnan(single) or single in (_INF, -_INF) or single == 0:
        return java_double(single)
    for digits in range(1, 10):
        text = f"{single:.{digits}g}"
        if struct.unpack(">f", struct.pack(">f", float(text)))[0] == single:
            break
    shortest = Decimal(text)
    if 1e-3 <= abs(single) < 1e7:
        out = format(shortest, "f")
        return out if "." in out else out + ".0"
    mantissa = "".join(map(str, shortest.as_tuple().digits)).rstrip("0") or "0"
    sign = "-" if single < 0 else ""
    return f"{sign}{mantissa[0]}.{mantissa[1:] or '0'}E{shortest.adjusted()}"


def _float(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return java_float(float(value))
    return _plain(value)


def _timestamp(value: Any) -> str:
    """java.sql.Timestamp.toString: ``yyyy-mm-dd hh:mm:ss.f``, the fraction without
    trailing zeros but at least one digit."""
    if not isinstance(value, datetime.datetime):
        return _plain(value)
    fraction = f"{value.microsecond * 1000:09d}".rstrip("0") or "0"
    return value.strftime("%Y-%m-%d %H:%M:%S") + "." + fraction


def _time(value: Any) -> str:
    """java.sql.Time.toString: ``hh:mm:ss``, without the fraction."""
    if not isinstance(value, datetime.time):
        return _plain(value)
    return value.strftime("%H:%M:%S")


def _pickled(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def build_renderer(spec: tuple[Any, ...] | None, nested: bool = False) -> Renderer:
    """The renderer of a record of the stream ``spec`` describes; ``nested`` for a field of
    a typed composite, which Java prints (a Row there as ``+I[a, 1]``), where a Row record
    itself is turned into text in Python first (``+I[a,1]``)."""
    if not spec or spec[0] == "pickled":
        return _pickled
    kind = spec[0]
    if kind == "string":
        return lambda v: "null" if v is None else str(v)
    if kind in ("boolean", "plain"):
        return _plain
    if kind == "double":
        return _double
    if kind == "float":
        return _float
    if kind == "timestamp":
        return _timestamp
    if kind == "time":
        return _time
    if kind == "tuple":
        fields = [build_renderer(s, nested=True) for s in spec[1]]
        return lambda v: (
            "null"
            if v is None
            else ("(" + ",".join(f(x) for f, x in zip(fields, v, strict=False)) + ")")
        )
    if kind == "row":
        return _java_row(spec) if nested else _python_row
    if kind == "list":
        element = build_renderer(spec[1], nested=True)
        return lambda v: "null" if v is None else "[" + ", ".join(element(x) for x in v) + "]"
    if kind == "map":
        key, value = build_renderer(spec[1], nested=True), build_renderer(spec[2], nested=True)
        return lambda v: (
            "null"
            if v is None
            else ("{" + ", ".join(f"{key(k)}={value(x)}" for k, x in v.items()) + "}")
        )
    return _plain


def _row_kind(v: Any) -> str:
    kind_value = getattr(v, "get_row_kind", None)
    return _ROW_KIND_SHORT.get(kind_value().value, "+I") if kind_value else "+I"


def _python_row(v: Any) -> str:
    """PyFlink turns a Row record into text in Python before printing it: each field's
    str(). That map asserts it got a Row: fused with the function before it (see
    ``weir.graph.coded_outputs``) it reads the record as made, which may be anything."""
    if not hasattr(type(v), "get_fields_by_names"):
        msg = (
            f"print() of a stream of a Row type got {v!r} ({type(v).__name__}), which is no "
            "Row: PyFlink's print() turns each Row into text and fails on anything else. "
            "Emit Rows, or declare the type the records have (output_type=...)."
        )
        raise DeclaredTypeError(msg)
    return _row_kind(v) + "[" + ",".join([str(x) for x in v]) + "]"


def _java_row(spec: tuple[Any, ...]) -> Renderer:
    """Java's Row.toString, for a Row inside a typed tuple, list or map."""
    fields = [build_renderer(s, nested=True) for s in spec[1]]

    def row(v: Any) -> str:
        if v is None:
            return "null"
        inner = ", ".join(f(x) for f, x in zip(fields, v, strict=False))
        return _row_kind(v) + "[" + inner + "]"

    return row
