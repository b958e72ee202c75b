"""The values of a CSV column, read from text as Flink's CSV format reads them (its
``CsvToRowDataConverters`` over Jackson's parser), a column at a time with
``pyarrow.compute``:

- a value equal to the schema's null literal (``set_null_value``) is null, quoted or not;
- numbers are read after Java's ``String.trim()`` (which drops every character up to
  U+0020), integers by Java's ``Integer.parseInt`` grammar (an optional sign and ASCII
  digits; no exponent, no ``0x``), out-of-range values are errors; FLOAT and DOUBLE by
  ``Double.parseDouble``'s (``NaN``, ``Infinity``, exponents, an ``f``/``d`` suffix, hex
  floats; not ``nan`` or ``inf``);
- BOOLEAN: ``true`` in any case (after trimming) is True, anything else False;
- DECIMAL(p, s): Java's ``BigDecimal`` grammar (untrimmed), rounded half-up to ``s``
  places; a value of more than ``p`` digits then is null, as Flink makes it;
- DATE: ``yyyy-m-d`` (untrimmed); TIMESTAMP: ``yyyy-MM-dd HH:mm:ss[.fraction]`` (trimmed), in
  milliseconds;
- STRING: the text as it is (an empty field is ``''``);
- ARRAY: an empty field is an empty list; else the parts between the column's element
  separator, each converted as its element type, a part equal to the null literal null.

A value that does not parse raises ``BadValueError`` with its position in the column.
"""

from __future__ import annotations

import datetime
import decimal
import re
from typing import Any

from weir.table.types import (
    ArrayType,
    BooleanType,
    CharType,
    DataType,
    DateType,
    DecimalType,
    FloatType,
    IntegralType,
    NumericType,
    TimestampType,
    VarCharType,
)

# What Java's String.trim() drops at either end.
_JAVA_WHITESPACE = "".join(chr(c) for c in range(0x21))
_INTEGER = r"^[+-]?[0-9]+$"
_DECIMAL_FLOAT = r"^[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)$"
_HEX_FLOAT = re.compile(
    r"^([+-]?)0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP]([+-]?[0-9]+)[fFdD]?$"
)
_BIG_DECIMAL = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_DATE = re.compile(r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})$")
_TIMESTAMP = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?$"
)
_INTEGER_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


class BadValueError(ValueError):
    """The value at ``index`` of a column is not of the column's type."""

    def __init__(self, index: int, value: str, expected: str) -> None:
        super().__init__(f"{value!r} is not {expected}")
        self.index = index
        self.value = value
        self.expected = expected


def convert(strings: Any, data_type: DataType, null_value: str | None, separator: str) -> Any:
    """The Arrow array of ``data_type`` (``_typed_columns.arrow_type``) read from the
    Arrow string array ``strings`` (no nulls); ``separator``: an ARRAY's element
    separator."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    if isinstance(data_type, ArrayType):
        return _array(strings, data_type, null_value, separator)
    nulls = None
    if null_value is not None:
        nulls = pc.equal(strings, null_value)
        if not pc.any(nulls).as_py():
            nulls = None
    values = _values(strings, data_type, nulls)
    if nulls is not None:
        values = pc.if_else(nulls, pa.scalar(None, values.type), values)
    return values


def _values(strings: Any, data_type: DataType, nulls: Any) -> Any:
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    from weir.datastream.formats._typed_columns import arrow_type  # noqa: PLC0415

    target = arrow_type(data_type)
    if isinstance(data_type, (VarCharType, CharType)):
        return strings
    if isinstance(data_type, BooleanType):
        return pc.equal(pc.utf8_lower(pc.utf8_trim(strings, _JAVA_WHITESPACE)), "true")
    if isinstance(data_type, DecimalType):
        return pa.array(
            _each(strings, nulls, lambda v: _decimal(v, data_type), "a decimal number"), target
        )
    if isinstance(data_type, DateType):
        return pa.array(_each(strings, nulls, _date, "a date (yyyy-mm-dd)"), target)
    if isinstance(data_type, TimestampType):
        expected = "a timestamp (yyyy-MM-dd HH:mm:ss[.fraction])"
        return pa.array(_each(strings, nulls, _timestamp, expected), target)
    assert isinstance(data_type, NumericType)
    if nulls is None:
        fast = _plain_numbers(strings, target, isinstance(data_type, IntegralType))
        if fast is not None:
            return fast
    trimmed = pc.utf8_trim(strings, _JAVA_WHITESPACE)
    if isinstance(data_type, IntegralType):
        return _integers(trimmed, target, nulls)
    return _floats(trimmed, target, nulls, isinstance(data_type, FloatType))


def _plain_numbers(strings: Any, target: Any, integral: bool) -> Any:
    """The numbers, when Arrow's own parser takes every one of them: it takes only what
    Java's takes too (no sign '+', no whitespace, no suffix), but also integers in hex
    (``0x10``) and floats ``nan`` and ``inf`` in any case, so a column with an ``x``, a
    NaN or an infinity is checked the slow way. None when it does not."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    if integral and pc.any(pc.match_substring(strings, "x", ignore_case=True)).as_py():
        return None
    try:
        numbers = pc.cast(strings, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if not integral and not pc.all(pc.is_finite(numbers)).as_py():
        return None
    return numbers


def _first_bad(ok: Any, nulls: Any) -> int | None:
    """The index of the first value neither ``ok`` nor null; None when all are."""
    import pyarrow.compute as pc  # noqa: PLC0415

    if nulls is not None:
        ok = pc.or_(ok, nulls)
    if pc.all(ok).as_py():
        return None
    return int(pc.index(ok, False).as_py())


def _integers(trimmed: Any, target: Any, nulls: Any) -> Any:
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    bad = _first_bad(pc.match_substring_regex(trimmed, _INTEGER), nulls)
    if bad is not None:
        raise BadValueError(bad, trimmed[bad].as_py(), f"an integer ({target})")
    if nulls is not None:
        trimmed = pc.if_else(nulls, "0", trimmed)
    unsigned = pc.replace_substring_regex(trimmed, r"^\+", "")
    try:
        numbers = pc.cast(unsigned, pa.int64())
    except pa.ArrowInvalid:
        numbers = None
    low, high = _INTEGER_RANGES[str(target)]
    if numbers is None or (target != pa.int64() and not _within(numbers, low, high)):
        for i, text in enumerate(unsigned.to_pylist()):
            if not low <= int(text) <= high:
                raise BadValueError(i, trimmed[i].as_py(), f"an integer ({target})") from None
    assert numbers is not None
    return numbers.cast(target)


def _within(numbers: Any, low: int, high: int) -> bool:
    import pyarrow.compute as pc  # noqa: PLC0415

    bounds = pc.min_max(numbers).as_py()
    return bounds["min"] is None or (low <= bounds["min"] and bounds["max"] <= high)


def _floats(trimmed: Any, target: Any, nulls: Any, single: bool) -> Any:
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    decimal_ok = pc.match_substring_regex(trimmed, _DECIMAL_FLOAT)
    bad = _first_bad(decimal_ok, nulls)
    if bad is None:
        if nulls is not None:
            trimmed = pc.if_else(nulls, "0", trimmed)
        return pc.cast(pc.replace_substring_regex(trimmed, "[fFdD]$", ""), target)
    # Hex floats, or a value that is no number: one at a time.
    import numpy as np  # noqa: PLC0415

    kind = "a float" if single else "a double"
    skip = [False] * len(trimmed) if nulls is None else nulls.to_pylist()
    values: list[float | None] = []
    for i, (text, null) in enumerate(zip(trimmed.to_pylist(), skip, strict=True)):
        if null:
            values.append(None)
        elif _HEX_FLOAT.match(text):
            value = float.fromhex(text.rstrip("fFdD"))
            values.append(float(np.float32(value)) if single else value)
        elif re.match(_DECIMAL_FLOAT, text):
            number = float(text.rstrip("fFdD").replace("Infinity", "inf"))
            values.append(float(np.float32(number)) if single else number)
        else:
            raise BadValueError(i, text, kind)
    return pa.array(values, target)


def _each(strings: Any, nulls: Any, parse: Any, expected: str) -> list[Any]:
    skip = [False] * len(strings) if nulls is None else nulls.to_pylist()
    values: list[Any] = []
    for i, (text, null) in enumerate(zip(strings.to_pylist(), skip, strict=True)):
        if null:
            values.append(None)
            continue
        try:
            values.append(parse(text))
        except ValueError:
            raise BadValueError(i, text, expected) from None
    return values


def _decimal(text: str, data_type: DecimalType) -> decimal.Decimal | None:
    if not _BIG_DECIMAL.match(text):
        raise ValueError(text)
    with decimal.localcontext() as context:
        context.prec = 100
        value = decimal.Decimal(text).quantize(
            decimal.Decimal(1).scaleb(-data_type.scale), rounding=decimal.ROUND_HALF_UP
        )
    # Java's BigDecimal.precision(): the digits of the unscaled value.
    if len(value.as_tuple().digits) > data_type.precision:
        return None
    return value


def _date(text: str) -> datetime.date:
    match = _DATE.match(text)
    if not match:
        raise ValueError(text)
    return datetime.date(*map(int, match.groups()))


def _timestamp(text: str) -> datetime.datetime:
    match = _TIMESTAMP.match(text.strip(_JAVA_WHITESPACE))
    if not match:
        raise ValueError(text)
    year, month, day, hour, minute, second, fraction = match.groups()
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    return datetime.datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second), millis * 1000
    )


def _array(strings: Any, data_type: ArrayType, null_value: str | None, separator: str) -> Any:
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    from weir.datastream.formats._typed_columns import arrow_type  # noqa: PLC0415

    parts = pc.split_pattern(strings, separator)
    # An empty field is an empty array, not one empty element.
    empty = pc.equal(strings, "")
    lengths = pc.if_else(empty, 0, pc.list_value_length(parts))
    offsets = pa.array([0, *pc.cumulative_sum(lengths).to_pylist()], pa.int32())
    elements = pc.list_flatten(pc.if_else(empty, pa.scalar([], parts.type), parts))
    try:
        values = convert(elements, data_type.element_type, null_value, separator)
    except BadValueError as exc:
        row = int(pc.index(pc.greater(offsets, exc.index), True).as_py()) - 1
        raise BadValueError(row, strings[row].as_py(), f"an array of {exc.expected}") from None
    return pa.ListArray.from_arrays(offsets, values, type=arrow_type(data_type))
