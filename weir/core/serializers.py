"""Whole-buffer serializers: one call per buffer of records, never one per record.

A buffer is one tag byte followed by the payload:

    b"M"  marshal of a list      b"m"  the same, lz4-compressed
    b"P"  pickle (protocol 5)    b"p"  the same, lz4-compressed
    b"T"  records with their timestamps (``serialize_timestamped``)
    b"C"  columns: an Arrow IPC stream (``serialize_columnar``)  b"c"  lz4-compressed
    b"N"  columns of numbers: their memory as it is (``serialize_columnar``)
          b"n"  lz4-compressed
    b"F"  records, then named buffers kept as they are (``frame_buffers``)

``marshal`` accepts only exact built-in types (a ``Row`` or a namedtuple is refused
rather than silently turned into a tuple), so trying it first and falling back to
pickle is correct for the types it round-trips; the edge's declared type says which to
try first. It does not round-trip a ``bytearray`` or a ``memoryview`` (they come back as
``bytes``), which is why records of no declared type are pickled first.
"""

from __future__ import annotations

import marshal
import pickle
import reprlib
import struct
from typing import Any

import lz4.block

from weir.core.columnar import ColumnBatch
from weir.core.errors import RecordSerializationError
from weir.core.job_graph import SerializerKind

_MARSHAL_VERSION = 4
# Compressing buffers smaller than this costs more than it saves.
_MIN_COMPRESS_BYTES = 512
_RECORD_REPR = reprlib.Repr()
_RECORD_REPR.maxstring = 60
_RECORD_REPR.maxother = 80


def serialize_batch(
    records: list[Any],
    first_choice: SerializerKind = SerializerKind.MARSHAL,
    compress: bool = False,
) -> bytes:
    payload: bytes | None = None
    tag = b"P"
    if first_choice is SerializerKind.MARSHAL:
        try:
            payload = marshal.dumps(records, _MARSHAL_VERSION)
            tag = b"M"
        except ValueError:  # an object marshal does not know: pickle handles everything else
            payload = None
    if payload is None:
        payload = pickle.dumps(records, protocol=5)
        tag = b"P"
    if compress and len(payload) >= _MIN_COMPRESS_BYTES:
        return tag.lower() + lz4.block.compress(payload)
    return tag + payload


def deserialize_batch(buffer: bytes | memoryview) -> list[Any]:
    tag = buffer[0]
    if tag == _FRAMED:
        return _unframed(memoryview(buffer))
    body = buffer[1:]
    if tag in (0x6D, 0x70):  # "m", "p": compressed
        body = lz4.block.decompress(body)
        tag -= 0x20
    if tag == 0x4D:  # "M"
        return marshal.loads(body)  # type: ignore[no-any-return]  # noqa: S302 (our own buffers)
    if tag == 0x50:  # "P"
        return pickle.loads(body)  # type: ignore[no-any-return]
    msg = f"unknown buffer tag {tag!r}: the sender and receiver run different Weir versions?"
    raise ValueError(msg)


# Records and named buffers: this byte, the length of the records' ``serialize_batch``
# (0: none) and the number of buffers; those records; then per buffer the length of its
# name in UTF-8, its own length, the name and the buffer.
_FRAMED = 0x46  # "F"
_FRAME_HEAD = struct.Struct("<cQI")
_NAMED_HEAD = struct.Struct("<HQ")


def frame_buffers(records: bytes, named: list[tuple[str, Any]]) -> list[Any]:
    """``records`` (a ``serialize_batch`` buffer, or empty) followed by ``(name, buffer)``
    pairs, as parts to be written one after the other: each buffer (any bytes-like
    object; an Arrow IPC stream of tens of megabytes, say) is a part of its own, never
    copied. ``deserialize_batch`` of the parts joined gives the records, then the pairs,
    each buffer a memoryview of what it read."""
    parts: list[Any] = [_FRAME_HEAD.pack(b"F", len(records), len(named)), records]
    for name, buffer in named:
        encoded = name.encode()
        parts.append(_NAMED_HEAD.pack(len(encoded), memoryview(buffer).nbytes) + encoded)
        parts.append(buffer)
    return parts


def _unframed(view: memoryview) -> list[Any]:
    _, records_size, count = _FRAME_HEAD.unpack_from(view)
    position = _FRAME_HEAD.size
    out = deserialize_batch(view[position : position + records_size]) if records_size else []
    position += records_size
    for _ in range(count):
        name_size, size = _NAMED_HEAD.unpack_from(view, position)
        position += _NAMED_HEAD.size
        name = bytes(view[position : position + name_size]).decode()
        position += name_size
        out.append((name, view[position : position + size]))
        position += size
    return out


# A buffer of records with timestamps: this byte, then ``serialize_batch`` of the pair
# ``[records, timestamps]`` (one call for both lists).
_TIMESTAMPED = 0x54  # "T"


def serialize_timestamped(
    records: list[Any],
    timestamps: list[int | None],
    first_choice: SerializerKind = SerializerKind.MARSHAL,
    compress: bool = False,
) -> bytes:
    """A buffer of records and their parallel event-time timestamps (None: no timestamp)."""
    return b"T" + serialize_batch([records, timestamps], first_choice, compress)


def deserialize_records(
    buffer: bytes | memoryview,
) -> tuple[list[Any], list[int | None] | None]:
    """``(records, timestamps)`` of a buffer written by ``serialize_batch`` (timestamps
    None), ``serialize_timestamped`` or ``serialize_columnar`` (then the records are a
    ``ColumnBatch``, which reads as a sequence of records)."""
    tag = buffer[0]
    if tag == _TIMESTAMPED:
        records, timestamps = deserialize_batch(buffer[1:])
        return records, timestamps
    if tag in (_COLUMNAR, _COLUMNAR_COMPRESSED, _NUMBERS, _NUMBERS_COMPRESSED):
        return deserialize_columnar(buffer)  # type: ignore[return-value]
    return deserialize_batch(buffer), None


# A buffer of columns: this byte ("c": lz4-compressed), then an Arrow IPC stream of one
# RecordBatch, the batch's ColumnSpec pickled in its schema's metadata (its records are
# made by it on the other side) and the timestamps, if any, in a column of their own.
_COLUMNAR = 0x43  # "C"
_COLUMNAR_COMPRESSED = 0x63  # "c"
_SPEC_KEY = b"weir.column_spec"
_TIMESTAMP_COLUMN = "__weir_timestamp"
# Specs seen on the receiving side, by their pickled bytes: a buffer's spec is unpickled
# once per stream, not once per buffer (a few dozen distinct specs per process at most).
_SPECS: dict[bytes, Any] = {}


# A buffer of number columns: this byte ("n": lz4-compressed), the layout's length and
# the row count (``_NUMBERS_HEAD``), the layout (the ColumnSpec, the columns' names and
# numpy dtypes, whether timestamps follow, pickled), then each column's memory (the
# timestamps last), every part starting 8 bytes apart. Nothing is converted: writing is
# one copy, reading none.
_NUMBERS = 0x4E  # "N"
_NUMBERS_COMPRESSED = 0x6E  # "n"
_NUMBERS_HEAD = struct.Struct("<IQ")
_NUMBER_KINDS = "biuf"
# Layouts, pickled, by what they hold (sending) and by their bytes (receiving): a few per
# stream.
_LAYOUTS_OUT: dict[tuple[Any, ...], bytes] = {}
_LAYOUTS_IN: dict[bytes, tuple[Any, list[tuple[str, Any]], bool]] = {}


_PADDING = bytes(8)


def _aligned(n: int) -> int:
    return (n + 7) & ~7


def _number_columns(batch: ColumnBatch, timestamps: Any) -> list[Any] | None:
    """The batch's columns (then its timestamps), when all are numbers in native byte
    order, as ``_serialize_numbers`` writes them; None otherwise."""
    import numpy as np  # noqa: PLC0415 (columnar batches only)

    columns = list(batch.columns.values())
    if timestamps is not None:
        if type(timestamps) is list:
            if None in timestamps:
                return None
            timestamps = np.asarray(timestamps, dtype=np.int64)
        columns.append(timestamps)
    for column in columns:
        if (
            type(column) is not np.ndarray
            or column.dtype.kind not in _NUMBER_KINDS
            or not column.dtype.isnative
            or column.ndim != 1
        ):
            return None
    return columns


def _serialize_numbers(
    batch: ColumnBatch, columns: list[Any], with_timestamps: bool, compress: bool
) -> bytes:
    import numpy as np  # noqa: PLC0415 (columnar batches only)

    names = tuple(batch.columns) + ((_TIMESTAMP_COLUMN,) if with_timestamps else ())
    dtypes = tuple(column.dtype.str for column in columns)
    key: tuple[Any, ...] | None = (batch.spec, names, dtypes)
    try:
        layout = _LAYOUTS_OUT.get(key)  # type: ignore[arg-type]
    except TypeError:  # a spec that does not hash: pickled every time
        key, layout = None, None
    if layout is None:
        layout = pickle.dumps(
            (batch.spec, list(zip(names, dtypes, strict=True)), with_timestamps), protocol=5
        )
        if key is not None:
            if len(_LAYOUTS_OUT) > 256:
                _LAYOUTS_OUT.clear()
            _LAYOUTS_OUT[key] = layout
    rows = len(batch)
    head = b"N" + _NUMBERS_HEAD.pack(len(layout), rows) + layout
    parts: list[Any] = [head, _PADDING[: _aligned(len(head)) - len(head)]]
    for column in columns:
        parts.append(np.ascontiguousarray(column).view(np.uint8).data)
        parts.append(_PADDING[: _aligned(column.nbytes) - column.nbytes])
    out = b"".join(parts)  # one copy of each column, into memory not cleared first
    if compress and len(out) >= _MIN_COMPRESS_BYTES:
        return b"n" + lz4.block.compress(out[1:])
    return out


def _deserialize_numbers(buffer: Any) -> tuple[ColumnBatch, Any]:
    import numpy as np  # noqa: PLC0415 (columnar batches only)

    if buffer[0] == _NUMBERS_COMPRESSED:
        buffer = b"N" + lz4.block.decompress(buffer[1:])
    layout_length, rows = _NUMBERS_HEAD.unpack_from(buffer, 1)
    start = 1 + _NUMBERS_HEAD.size
    raw = bytes(buffer[start : start + layout_length])
    layout = _LAYOUTS_IN.get(raw)
    if layout is None:
        if len(_LAYOUTS_IN) > 256:
            _LAYOUTS_IN.clear()
        layout = _LAYOUTS_IN[raw] = pickle.loads(raw)  # our own buffers
    spec, fields, with_timestamps = layout
    at = _aligned(start + layout_length)
    columns = {}
    timestamps = None
    last = len(fields) - 1
    for i, (name, dtype) in enumerate(fields):
        column = np.frombuffer(buffer, dtype=dtype, count=rows, offset=at)
        at += _aligned(column.nbytes)
        if with_timestamps and i == last:
            timestamps = column
        else:
            columns[name] = column
    return ColumnBatch(columns, spec), timestamps


def serialize_columnar(batch: ColumnBatch, timestamps: Any = None, compress: bool = False) -> bytes:
    """A ColumnBatch (and its records' timestamps: a list, or an int64 array) as one
    buffer, with no record built: number columns as their memory, others through Arrow."""
    numbers = _number_columns(batch, timestamps)
    if numbers is not None:
        return _serialize_numbers(batch, numbers, timestamps is not None, compress)
    import pyarrow as pa  # noqa: PLC0415 (columnar batches only)

    names = list(batch.columns)
    arrays = [_arrow_array(column) for column in batch.columns.values()]
    if timestamps is not None:
        names.append(_TIMESTAMP_COLUMN)
        if type(timestamps) is not list:
            arrays.append(_arrow_array(timestamps))
        elif None in timestamps:
            arrays.append(pa.array(timestamps, type=pa.int64()))
        else:  # through numpy: several times cheaper than from the list itself
            import numpy as np  # noqa: PLC0415

            arrays.append(pa.array(np.asarray(timestamps, dtype=np.int64)))
    spec = pickle.dumps(batch.spec, protocol=5)
    table = pa.RecordBatch.from_arrays(arrays, names=names).replace_schema_metadata(
        {_SPEC_KEY: spec}
    )
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_batch(table)
    payload = sink.getvalue().to_pybytes()
    if compress and len(payload) >= _MIN_COMPRESS_BYTES:
        return b"c" + lz4.block.compress(payload)
    return b"C" + payload


def _arrow_array(column: Any) -> Any:
    """A numpy column as an Arrow array: a number column's memory wrapped as it is (no
    copy; ``pa.array`` would first import pandas, seconds on a loaded machine, in the
    middle of the stream's first batch), anything else through ``pa.array``."""
    import pyarrow as pa  # noqa: PLC0415

    if column.dtype.kind in "iuf" and column.flags.c_contiguous and column.dtype.isnative:
        return pa.Array.from_buffers(
            pa.from_numpy_dtype(column.dtype), len(column), [None, pa.py_buffer(column)]
        )
    return pa.array(column)


# Arrow's names of the number types whose numpy names differ.
_NUMPY_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64"}


def _numpy_column(column: Any) -> Any:
    """An Arrow column as a numpy array: a number column without nulls is its memory as
    it is (``to_numpy`` would first import pandas, as ``pa.array`` would). Numbers or
    booleans with nulls, and lists, come back as the object column they were sent as
    (Python values and None; lists, not arrays), which ``to_numpy`` would make NaN and
    arrays."""
    import numpy as np  # noqa: PLC0415

    kind = str(column.type)
    number = kind in _NUMPY_NAMES or kind.startswith(("int", "uint"))
    if not column.null_count and number:
        dtype = np.dtype(_NUMPY_NAMES.get(kind, kind))
        data = column.buffers()[1]
        return np.frombuffer(
            data, dtype=dtype, count=len(column), offset=column.offset * dtype.itemsize
        )
    if (column.null_count and (number or kind == "bool")) or kind.startswith(
        ("list", "large_list")
    ):
        values = column.to_pylist()
        objects = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            objects[i] = value
        return objects
    return column.to_numpy(zero_copy_only=False)


def deserialize_columnar(buffer: bytes | memoryview) -> tuple[ColumnBatch, Any]:
    """``(batch, timestamps)`` of a ``serialize_columnar`` buffer: the timestamps an int64
    array, or a list when some are missing (None when none has one)."""
    if buffer[0] in (_NUMBERS, _NUMBERS_COMPRESSED):
        return _deserialize_numbers(buffer)
    import pyarrow as pa  # noqa: PLC0415

    body = buffer[1:]
    if buffer[0] == _COLUMNAR_COMPRESSED:
        body = lz4.block.decompress(body)
    batch = pa.ipc.open_stream(pa.py_buffer(body)).read_next_batch()
    raw_spec = batch.schema.metadata[_SPEC_KEY]
    spec = _SPECS.get(raw_spec)
    if spec is None:
        spec = _SPECS[raw_spec] = pickle.loads(raw_spec)  # our own buffers
    columns = {}
    timestamps = None
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if name == _TIMESTAMP_COLUMN:
            timestamps = column.to_pylist() if column.null_count else _numpy_column(column)
        else:
            columns[name] = _numpy_column(column)
    return ColumnBatch(columns, spec), timestamps


def unpicklable_record_error(
    records: list[Any], emitted_by: str, destination: str
) -> RecordSerializationError | None:
    """After ``serialize_batch(records)`` failed: the error naming the first record that
    cannot be pickled on its own, ``emitted_by`` (``"operator 'parse'"``) and where it
    was going; None when each record pickles alone (the buffer failed for another
    reason). One ``pickle`` call per record, so only for a buffer that already failed."""
    for record in records:
        try:
            pickle.dumps(record, protocol=5)
        except Exception as exc:  # whatever pickling raises is about the user's record
            msg = (
                f"{emitted_by} emitted a record that cannot be pickled, which it must be to "
                f"reach {destination}: {_RECORD_REPR.repr(record)} (a {type(record).__name__};"
                f" {type(exc).__name__}: {exc}). Emit records that pickle: plain values, "
                "tuples, Rows or your own picklable classes, with no locks, open files, "
                "sockets or clients inside (create those in the open() of the function "
                "that uses them)"
            )
            return RecordSerializationError(msg)
    return None
