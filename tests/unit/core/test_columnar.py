"""ColumnBatch and the batch formats of map_batches: records built from columns once,
slices that stay columnar, each format in and out, and errors that say what to return."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from weir.core.columnar import (
    BatchFormat,
    ColumnBatch,
    ColumnSpec,
    as_records,
    from_format,
    to_format,
)

PAIRS = ColumnSpec(("f0", "f1"), None, ("int64", "float64"))
LONGS = ColumnSpec(None, None, ("int64",))


def _pair_batch() -> ColumnBatch:
    return ColumnBatch({"f0": np.arange(4), "f1": np.arange(4) * 0.5}, PAIRS)


def test_records_are_built_once_from_the_columns():
    batch = _pair_batch()
    assert len(batch) == 4
    records = batch.records()
    assert records == [(0, 0.0), (1, 0.5), (2, 1.0), (3, 1.5)]
    assert batch.records() is records
    assert list(batch) == records
    assert batch[2] == (2, 1.0)
    assert as_records(batch) is records


def test_a_slice_stays_columnar():
    part = _pair_batch()[1:3]
    assert isinstance(part, ColumnBatch)
    assert part.records() == [(1, 0.5), (2, 1.0)]


def test_records_of_a_row_type_are_made_by_its_spec():
    spec = ColumnSpec(("a", "b"), lambda *values: {"row": values})
    batch = ColumnBatch({"a": np.array([1]), "b": np.array([2])}, spec)
    assert batch.records() == [{"row": (1, 2)}]


@pytest.mark.parametrize("fmt", list(BatchFormat))
def test_every_format_round_trips_records(fmt):
    records = [(1, 0.5), (2, 1.5), (3, 2.5)]
    given = to_format(records, fmt, PAIRS)
    back = from_format(given, fmt, PAIRS)
    assert as_records(back) == records


def test_single_values_are_one_array():
    array = to_format([1, 2, 3], BatchFormat.NUMPY, LONGS)
    assert isinstance(array, np.ndarray)
    assert array.dtype == np.int64
    assert as_records(from_format(array * 2, BatchFormat.NUMPY, LONGS)) == [2, 4, 6]


def test_a_columnar_batch_reaches_a_batch_function_without_records():
    batch = _pair_batch()
    columns = to_format(batch, BatchFormat.NUMPY, PAIRS)
    assert columns["f0"] is batch.columns["f0"]
    assert batch._records is None


def test_without_a_declared_type_columns_make_tuples_and_one_array_single_values():
    assert as_records(from_format({"x": [1], "y": [2]}, BatchFormat.NUMPY, None)) == [(1, 2)]
    assert as_records(from_format(np.array([7]), BatchFormat.NUMPY, None)) == [7]
    frame = pd.DataFrame({"x": [1, 2]})
    assert as_records(from_format(frame, BatchFormat.PANDAS, None)) == [(1,), (2,)]
    arrow = pa.RecordBatch.from_pydict({"x": [3]})
    assert as_records(from_format(arrow, BatchFormat.ARROW, None)) == [(3,)]


def test_errors_say_what_to_return():
    with pytest.raises(TypeError, match="numpy array .* or a dict of arrays"):
        from_format([1, 2], BatchFormat.NUMPY, LONGS)
    with pytest.raises(TypeError, match="pyarrow.RecordBatch"):
        from_format({"f0": [1]}, BatchFormat.ARROW, LONGS)
    with pytest.raises(TypeError, match="pandas.DataFrame"):
        from_format({"f0": [1]}, BatchFormat.PANDAS, LONGS)
    with pytest.raises(TypeError, match="columns of different lengths"):
        from_format({"f0": [1, 2], "f1": [1.0]}, BatchFormat.NUMPY, PAIRS)
    with pytest.raises(TypeError, match="the fields \\['f0', 'f1'\\]"):
        from_format({"f0": [1]}, BatchFormat.NUMPY, PAIRS)
    with pytest.raises(ValueError, match="batch_format must be one of"):
        BatchFormat.of("rows")


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("timestamps", [None, [5, 6, 7, 8], [5, None, 7, None]])
def test_a_column_batch_crosses_the_wire_as_columns(compress, timestamps):
    from weir.core.serializers import deserialize_records, serialize_columnar

    batch = ColumnBatch(
        {"f0": np.arange(400) % 4, "f1": np.arange(400) * 0.25},
        ColumnSpec(("f0", "f1"), None, ("int64", "float64")),
    )
    stamps = None if timestamps is None else timestamps * 100
    buffer = serialize_columnar(batch, stamps, compress=compress)
    # Numbers with every timestamp (or none) as their memory; a missing one through Arrow.
    tag = b"c" if timestamps is not None and None in timestamps else b"n"
    assert buffer[:1] == (tag if compress else tag.upper())
    received, received_stamps = deserialize_records(buffer)
    assert isinstance(received, ColumnBatch)
    assert received._records is None
    assert received.records() == batch.records()
    if timestamps is None or None in timestamps:
        assert received_stamps == stamps
    else:  # all there: an int64 array, as a batch of columns carries them
        assert isinstance(received_stamps, np.ndarray)
        assert received_stamps.dtype == np.int64
        assert received_stamps.tolist() == stamps


def test_number_columns_cross_as_their_memory_with_their_dtypes_and_others_through_arrow():
    from weir.core.serializers import deserialize_records, serialize_columnar

    every_other = np.arange(20, dtype=np.int16)[::2]  # not contiguous
    columns = {
        "f0": every_other,
        "f1": np.arange(10, dtype=np.uint8),
        "f2": np.arange(10, dtype=np.float32) / 3,
        "f3": np.arange(10) % 2 == 0,
    }
    spec = ColumnSpec(("f0", "f1", "f2", "f3"), None, ("int16", "uint8", "float32", "bool"))
    buffer = serialize_columnar(ColumnBatch(columns, spec), np.arange(10, dtype=np.int64))
    assert buffer[:1] == b"N"
    received, stamps = deserialize_records(buffer)
    for name, column in columns.items():
        assert received.columns[name].dtype == column.dtype
        assert received.columns[name].tolist() == column.tolist()
    assert stamps.tolist() == list(range(10))
    assert received.records() == ColumnBatch(columns, spec).records()

    text = ColumnBatch(
        {"f0": np.array(["a", "bc"], dtype=object)}, ColumnSpec(("f0",), None, ("object",))
    )
    buffer = serialize_columnar(text)
    assert buffer[:1] == b"C"
    assert deserialize_records(buffer)[0].records() == text.records()


def test_timestamps_given_as_an_array_cross_as_one():
    from weir.core.serializers import deserialize_records, serialize_columnar

    batch = ColumnBatch({"f0": np.arange(5)}, ColumnSpec(("f0",), None, ("int64",)))
    stamps = np.arange(5, dtype=np.int64) * 1000 - 2000
    _, received = deserialize_records(serialize_columnar(batch, stamps))
    assert received.tolist() == stamps.tolist()


def test_the_spec_travels_so_rows_come_back_named():
    from weir.common import Types
    from weir.core.serializers import deserialize_records, serialize_columnar
    from weir.datastream._column_specs import column_spec

    spec = column_spec(Types.ROW_NAMED(["auction", "price"], [Types.LONG(), Types.DOUBLE()]))
    batch = ColumnBatch({"auction": np.array([3]), "price": np.array([1.5])}, spec)
    (row,), _ = deserialize_records(serialize_columnar(batch))
    assert row.auction == 3 and row.price == 1.5


def test_columns_take_the_declared_widths():
    spec = ColumnSpec(("f0", "f1"), None, ("int32", "float32"))
    batch = from_format(
        {"f0": np.array([1, 2], dtype=np.int64), "f1": np.array([1.23, 2.5])},
        BatchFormat.NUMPY,
        spec,
    )
    assert batch.columns["f0"].dtype == np.int32
    assert batch.columns["f1"].dtype == np.float32
    assert as_records(batch)[0] == (1, 1.2300000190734863)  # single precision, as PyFlink


def test_a_projected_batch_keeps_the_fields_read_and_its_records_hold_none_elsewhere():
    from weir.core.columnar import batch_column, project

    spec = ColumnSpec(("f0", "f1", "f2"), None, ("int64",) * 3)
    batch = ColumnBatch({"f0": np.arange(3), "f1": np.arange(3) * 10, "f2": -np.arange(3)}, spec)
    kept = project(batch, (2, "f0"))
    assert list(kept.columns) == ["f0", "f2"]  # in field order
    assert kept.records() == [(0, None, 0), (1, None, -1), (2, None, -2)]
    assert batch_column(kept, 2).tolist() == [0, -1, -2]  # a position is the spec's
    assert batch_column(kept, 1) is None
    assert project(batch, (0, 1, 2)) is batch  # nothing left out
    assert project(batch, (7,)) is batch  # no such field: nothing is taken away


def test_columns_of_python_values_with_none_and_lists_cross_the_wire_as_they_were():
    """An object column of numbers with None (a file's column with nulls) comes back with
    None, not NaN, its ints ints; a column of lists comes back as lists."""
    from weir.core.serializers import deserialize_records, serialize_columnar

    def objects(values):
        column = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            column[i] = value
        return column

    spec = ColumnSpec(("i", "d", "b", "tags"), None, ("int32", "float64", "bool", None))
    batch = ColumnBatch(
        {
            "i": objects([1, None, 3]),
            "d": objects([None, 0.5, 1.5]),
            "b": objects([True, None, False]),
            "tags": objects([["a", "b"], [], None]),
        },
        spec,
    )
    received, _ = deserialize_records(serialize_columnar(batch))
    records = as_records(received)
    assert records == [(1, None, True, ["a", "b"]), (None, 0.5, None, []), (3, 1.5, False, None)]
    assert [type(v) for v in records[0]] == [int, type(None), bool, list]
