"""JSON objects as Rows and back (mirrors ``pyflink.datastream.formats.json``).

The Row type names the fields: ``JsonRowDeserializationSchema`` reads those properties
of each JSON object, in that order, converting each to its field's type (nested Rows,
lists, arrays and maps too); ``JsonRowSerializationSchema`` writes a Row's fields as an
object under those names. A property the type does not name is ignored, as in Flink.

A ``Types.PRIMITIVE_ARRAY(Types.BYTE())`` field is a base64 string in JSON, as Jackson
writes a ``byte[]`` (standard alphabet, padded): read back as ``bytes``; a string that is
not such base64 fails to parse, and a value of another JSON type reads as None, as in
Flink. Bytes in a field of no declared byte type are written as base64 too.

Text as Flink's Jackson reads and writes it: a message must be valid UTF-8 (or UTF-16 or
UTF-32), else it fails to parse, as in Flink (``ignore_parse_errors()`` skips it); written,
text is UTF-8 as it is, but a character beyond U+FFFF and an unpaired surrogate, which are
``\\uXXXX`` escapes, with upper-case hex digits as Jackson writes every escape.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from weir.common.serialization import DeserializationSchema, SerializationSchema
from weir.common.typeinfo import (
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TypeInformation,
)
from weir.common.types import Row
from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.core.errors import WeirError
from weir.datastream._column_specs import column_spec

__all__ = ["JsonRowDeserializationSchema", "JsonRowFormatError", "JsonRowSerializationSchema"]


class JsonRowFormatError(WeirError, ValueError):
    """A message is not the JSON object the Row type describes."""


Convert = Callable[[Any], Any]

_INTEGRAL = frozenset({"Byte", "Short", "Integer", "Long", "BigInteger"})
_FLOATING = frozenset({"Float", "Double"})


def _to_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        msg = f"expected an integer; got {value!r}"
        raise TypeError(msg)
    return int(value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    msg = f"expected a boolean; got {value!r}"
    raise TypeError(msg)


def _to_str(value: Any) -> str:
    # Flink writes a nested object or array into a STRING field as its JSON text.
    return value if isinstance(value, str) else json.dumps(value)


def _is_bytes(type_info: TypeInformation) -> bool:
    """``Types.PRIMITIVE_ARRAY(Types.BYTE())``: a ``byte[]`` in Flink, binary in JSON."""
    return (
        type(type_info) is PrimitiveArrayTypeInfo and repr(type_info.get_component_type()) == "Byte"
    )


def _to_base64(value: Any) -> str:
    """Bytes (or Java's signed byte values) as Jackson writes a ``byte[]``."""
    data = value if isinstance(value, bytes | bytearray) else bytes(b & 0xFF for b in value)
    return base64.b64encode(data).decode("ascii")


def _from_base64(value: Any) -> bytes | None:
    """A ``byte[]`` field: a base64 string, else None (Jackson's ``binaryValue``)."""
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        msg = f"expected base64 text for a byte array; got {value!r} ({exc})"
        raise TypeError(msg) from None


def _reader(type_info: TypeInformation, fail_on_missing_field: bool) -> Convert:
    """A function from a parsed JSON value to a value of ``type_info``."""
    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        fields = [_reader(t, fail_on_missing_field) for t in type_info.get_field_types()]

        def read_row(value: Any) -> Row:
            if not isinstance(value, dict):
                msg = f"expected a JSON object; got {value!r}"
                raise TypeError(msg)
            values: list[Any] = []
            for name, read in zip(names, fields, strict=True):
                if name not in value:
                    if fail_on_missing_field:
                        msg = f"the field {name!r} is missing"
                        raise KeyError(msg)
                    values.append(None)
                    continue
                item = value[name]
                values.append(None if item is None else read(item))
            return Row(**dict(zip(names, values, strict=True)))

        return read_row
    if _is_bytes(type_info):
        return _from_base64
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element_type = getattr(type_info, "elem_type", None) or getattr(
            type_info, "_element_type", None
        )
        read_element = (
            _reader(element_type, fail_on_missing_field) if element_type else (lambda v: v)
        )

        def read_list(value: Any) -> list[Any]:
            if not isinstance(value, list):
                msg = f"expected a JSON array; got {value!r}"
                raise TypeError(msg)
            return [None if v is None else read_element(v) for v in value]

        return read_list
    if isinstance(type_info, MapTypeInfo):
        read_value = _reader(type_info._value_type_info, fail_on_missing_field)

        def read_map(value: Any) -> dict[str, Any]:
            if not isinstance(value, dict):
                msg = f"expected a JSON object; got {value!r}"
                raise TypeError(msg)
            return {k: None if v is None else read_value(v) for k, v in value.items()}

        return read_map
    if isinstance(type_info, BasicTypeInfo):
        name = repr(type_info)
        if name in _INTEGRAL:
            return _to_int
        if name in _FLOATING:
            return float
        if name == "Boolean":
            return _to_bool
        if name in {"String", "Char"}:
            return _to_str
        if name == "BigDecimal":
            return lambda v: decimal.Decimal(str(v))
    if isinstance(type_info, SqlTimeTypeInfo):
        kind = repr(type_info)
        if "Date" in kind:
            return datetime.date.fromisoformat
        if "Timestamp" in kind:
            return lambda v: datetime.datetime.fromisoformat(str(v).replace("Z", "+00:00"))
        return datetime.time.fromisoformat
    return lambda v: v


def _json_default(value: Any) -> Any:
    if isinstance(value, Row):
        return list(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray):
        return _to_base64(value)
    msg = f"{type(value).__name__} is not JSON serializable"
    raise TypeError(msg)


# What json.dumps(ensure_ascii=False) leaves as it is and Jackson escapes.
_JACKSON_ESCAPES = re.compile("[\U00010000-\U0010ffff\ud800-\udfff]")
# A control character json.dumps escapes in lower case: \\u00XX after an even run of
# backslashes (the escape itself, not a backslash of the text before "u00").
_CONTROL_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u00([01][0-9a-f])")


def _jackson_escape(match: re.Match[str]) -> str:
    units = match.group().encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))


def _as_jackson_writes(text: str) -> bytes:
    """The JSON ``json.dumps(..., ensure_ascii=False)`` wrote, as Jackson's bytes."""
    if "\\u00" in text:
        text = _CONTROL_ESCAPE.sub(lambda m: f"{m.group(1)}\\u00{m.group(2).upper()}", text)
    if not text.isascii():
        text = _JACKSON_ESCAPES.sub(_jackson_escape, text)
    return text.encode("utf-8")


def _writer(type_info: TypeInformation) -> Convert:
    """A function from a value of ``type_info`` to what ``json.dumps`` writes."""
    if isinstance(type_info, RowTypeInfo):
        names = type_info.get_field_names()
        fields = [_writer(t) for t in type_info.get_field_types()]

        def write_row(row: Any) -> dict[str, Any]:
            values = row.as_dict() if isinstance(row, Row) and _named(row) else None
            if values is None:
                items = list(row)
                if len(items) != len(names):
                    msg = f"expected a Row of {len(names)} fields {names}; got {row!r}"
                    raise ValueError(msg)
                values = dict(zip(names, items, strict=True))
            return {
                n: None if values.get(n) is None else w(values.get(n))
                for n, w in zip(names, fields, strict=True)
            }

        return write_row
    if _is_bytes(type_info):
        return _to_base64
    if isinstance(type_info, ListTypeInfo | PrimitiveArrayTypeInfo):
        element_type = getattr(type_info, "elem_type", None) or getattr(
            type_info, "_element_type", None
        )
        write_element = _writer(element_type) if element_type else (lambda v: v)
        return lambda value: [None if v is None else write_element(v) for v in value]
    if isinstance(type_info, MapTypeInfo):
        write_value = _writer(type_info._value_type_info)
        return lambda value: {
            str(k): None if v is None else write_value(v) for k, v in value.items()
        }
    return lambda v: v


def _named(row: Row) -> bool:
    return hasattr(row, "_fields")


class JsonRowDeserializationSchema(DeserializationSchema):
    """Deserializes a JSON object into a Row of the given type (PyFlink's)::

        schema = (JsonRowDeserializationSchema.builder()
                  .type_info(Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]))
                  .build())

    A message that is no such object fails the job, naming the message, unless
    ``ignore_parse_errors()`` was set: then it is skipped. A missing field is None
    unless ``fail_on_missing_field()`` was set.
    """

    def __init__(
        self,
        type_info: TypeInformation,
        fail_on_missing_field: bool = False,
        ignore_parse_errors: bool = False,
    ) -> None:
        if not isinstance(type_info, RowTypeInfo):
            msg = (
                "JsonRowDeserializationSchema needs a Row type (Types.ROW_NAMED(names, types)) "
                f"naming the JSON properties to read; got {type_info!r}"
            )
            raise TypeError(msg)
        self._type_info = type_info
        self._fail_on_missing_field = fail_on_missing_field
        self._ignore_parse_errors = ignore_parse_errors
        self._read: Convert | None = None

    @staticmethod
    def builder() -> JsonRowDeserializationSchema.Builder:
        """A Builder for a JsonRowDeserializationSchema."""
        return JsonRowDeserializationSchema.Builder()

    class Builder:
        """Builder of a JsonRowDeserializationSchema."""

        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None
            self._fail_on_missing_field = False
            self._ignore_parse_errors = False

        def type_info(self, type_info: TypeInformation) -> JsonRowDeserializationSchema.Builder:
            """The Row type of the result; its field names are the JSON properties read."""
            self._type_info = type_info
            return self

        def json_schema(self, json_schema: str) -> JsonRowDeserializationSchema.Builder:
            msg = (
                "JsonRowDeserializationSchema.Builder.json_schema is not supported: give the "
                "Row type with type_info(Types.ROW_NAMED(names, types)) instead"
            )
            raise NotImplementedError(msg)

        def fail_on_missing_field(self) -> JsonRowDeserializationSchema.Builder:
            """Fail on a message that lacks one of the Row's fields (default: None)."""
            self._fail_on_missing_field = True
            return self

        def ignore_parse_errors(self) -> JsonRowDeserializationSchema.Builder:
            """Skip a message that cannot be parsed instead of failing the job."""
            self._ignore_parse_errors = True
            return self

        def build(self) -> JsonRowDeserializationSchema:
            if self._type_info is None:
                msg = "JsonRowDeserializationSchema.Builder: set type_info(...) before build()"
                raise TypeError(msg)
            return JsonRowDeserializationSchema(
                self._type_info, self._fail_on_missing_field, self._ignore_parse_errors
            )

    def deserialize(self, message: bytes) -> Row | None:
        read = self._read
        if read is None:
            read = self._read = _reader(self._type_info, self._fail_on_missing_field)
        try:
            return read(json.loads(message))  # type: ignore[no-any-return]
        except (ValueError, TypeError, KeyError) as exc:
            if self._ignore_parse_errors:
                return None
            shown = message[:200] if isinstance(message, bytes | bytearray) else message
            msg = (
                f"cannot read the JSON message {shown!r} as {self._type_info!r}: {exc}; fix "
                "the data, or skip such messages with "
                "JsonRowDeserializationSchema.builder().ignore_parse_errors()"
            )
            raise JsonRowFormatError(msg) from exc

    def deserialize_batch(self, messages: Sequence[bytes]) -> list[Any]:
        """``deserialize`` of each message; a batch of UTF-8 JSON objects is parsed with
        one ``json.loads`` (of the messages joined into an array), anything else message
        by message, with the same results and errors."""
        read = self._read
        if read is None:
            read = self._read = _reader(self._type_info, self._fail_on_missing_field)
        parsed = _parse_joined(messages)
        if parsed is not None:
            try:
                return [read(value) for value in parsed]
            except (ValueError, TypeError, KeyError):
                pass  # a message the type refuses: message by message names it (or skips it)
        return super().deserialize_batch(messages)

    def deserialize_columns(self, messages: Sequence[bytes]) -> ColumnBatch | None:
        """Weir's own: the Rows ``deserialize`` makes of ``messages``, as a ColumnBatch
        (one numpy column per field, as ``map_batches`` would make them of those Rows)
        without a Row built, for a Row type of longs, ints, shorts, bytes, booleans,
        doubles and strings; None when the batch has no such form (another type, a
        message that is not such an object, a missing or null number, a string that
        ends in NUL, which numpy's text drops), and the Rows are then made one by one."""
        spec = self._column_spec()
        if spec is None:
            return None
        parsed = _parse_joined(messages)
        if parsed is None or not all(type(value) is dict for value in parsed):
            return None
        import numpy as np  # noqa: PLC0415 (only columnar consumers)

        columns: dict[str, Any] = {}
        assert spec.names is not None and spec.numpy_dtypes is not None
        for name, dtype, read in zip(
            spec.names, spec.numpy_dtypes, self._field_readers, strict=True
        ):
            try:
                values = [
                    None if (item := value.get(name)) is None else read(item) for value in parsed
                ]
            except (ValueError, TypeError):
                return None
            if dtype is not None and None in values:
                return None  # a null number: no numpy form (its Row holds None)
            if dtype is None and any(type(v) is str and v.endswith("\0") for v in values):
                return None  # numpy's fixed-width text drops trailing NULs
            if self._fail_on_missing_field and not all(name in value for value in parsed):
                return None
            try:
                columns[name] = np.asarray(values, dtype=dtype)
            except (ValueError, TypeError, OverflowError):
                return None
        return ColumnBatch(columns, spec)

    def _column_spec(self) -> ColumnSpec | None:
        spec = self.__dict__.get("_spec", _UNSET)
        if spec is _UNSET:
            spec = None
            types = self._type_info.get_field_types()
            if all(repr(t) in _COLUMN_TYPES for t in types):
                spec = column_spec(self._type_info)
                self._field_readers = [_reader(t, self._fail_on_missing_field) for t in types]
            self._spec = spec
        return spec  # type: ignore[no-any-return]

    def get_produced_type(self) -> TypeInformation:
        return self._type_info

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_read"] = None
        state.pop("_spec", None)
        state.pop("_field_readers", None)
        return state

    def __repr__(self) -> str:
        return f"JsonRowDeserializationSchema({self._type_info!r})"


# Field types whose numpy column gives back the very values of the Row's fields (a
# FLOAT column is single precision, the Row's field a Python float of double precision).
_COLUMN_TYPES = frozenset({"Long", "Integer", "Short", "Byte", "Boolean", "Double", "String"})
_UNSET = object()


def _parse_joined(messages: Sequence[bytes]) -> list[Any] | None:
    """The JSON values of ``messages``, parsed as one array; None when that does not give
    one value per message (a message that is not one JSON value, or not UTF-8 text,
    which ``json.loads`` of the message alone reads in its own encoding)."""
    if not messages or not all(type(m) is bytes for m in messages):
        return None
    try:
        parsed = json.loads(b"[" + b",".join(messages) + b"]")
    except ValueError:
        return None
    if len(parsed) != len(messages):
        return None
    return parsed  # type: ignore[no-any-return]


class JsonRowSerializationSchema(SerializationSchema):
    """Serializes a Row into a JSON object under the Row type's field names (PyFlink's)::

    JsonRowSerializationSchema.builder().with_type_info(row_type).build()
    """

    def __init__(self, type_info: TypeInformation) -> None:
        if not isinstance(type_info, RowTypeInfo):
            msg = (
                "JsonRowSerializationSchema needs a Row type (Types.ROW_NAMED(names, types)); "
                f"got {type_info!r}"
            )
            raise TypeError(msg)
        self._type_info = type_info
        self._write: Convert | None = None

    @staticmethod
    def builder() -> JsonRowSerializationSchema.Builder:
        return JsonRowSerializationSchema.Builder()

    class Builder:
        """Builder of a JsonRowSerializationSchema."""

        def __init__(self) -> None:
            self._type_info: TypeInformation | None = None

        def with_type_info(self, type_info: TypeInformation) -> JsonRowSerializationSchema.Builder:
            """The Row type of the records; its field names are the JSON properties."""
            self._type_info = type_info
            return self

        def build(self) -> JsonRowSerializationSchema:
            if self._type_info is None:
                msg = "Typeinfo should be set."
                raise TypeError(msg)
            return JsonRowSerializationSchema(self._type_info)

    def serialize(self, element: Any) -> bytes:
        write = self._write
        if write is None:
            write = self._write = _writer(self._type_info)
        text = json.dumps(
            write(element), default=_json_default, separators=(",", ":"), ensure_ascii=False
        )
        return _as_jackson_writes(text)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_write"] = None
        return state

    def __repr__(self) -> str:
        return f"JsonRowSerializationSchema({self._type_info!r})"
