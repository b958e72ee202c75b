"""ParquetColumnarRowInputFormat: PyFlink's signature, Rows of the declared fields (a field
the file lacks is null), type mismatches named, positions by row group restored exactly,
and columns for a consumer of columns."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from weir.common import Configuration, Row, Types
from weir.core.columnar import ColumnBatch
from weir.datastream.connectors.file_system import FileSource, StreamFormat
from weir.datastream.formats._typed_columns import FileFormatError
from weir.datastream.formats.parquet import ParquetColumnarRowInputFormat
from weir.table import DataTypes as T


class Ctx:
    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_number_of_parallel_subtasks(self) -> int:
        return 1


def _source(path, row_type, **options) -> FileSource:
    fmt = ParquetColumnarRowInputFormat(row_type, **options)
    return FileSource.for_bulk_file_format(fmt, str(path)).build()


def read_all(source: FileSource, max_records: int = 100) -> list[Row]:
    reader = source.create_reader(Ctx())
    out: list[Row] = []
    while (batch := reader.poll_batch(max_records)) is not None:
        out.extend(batch)
    return out


TABLE = pa.table(
    {
        "a": pa.array([1, 2, None], pa.int32()),
        "b": ["x", None, "z"],
        "c": [1.5, 2.5, 3.5],
        "d": pa.array(
            [decimal.Decimal("1.25"), None, decimal.Decimal("3.00")], pa.decimal128(5, 2)
        ),
        "e": pa.array([datetime.date(2024, 1, 2)] * 3, pa.date32()),
        "f": [True, False, None],
        "g": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 123456)] * 3, pa.timestamp("us")),
        "h": pa.array([1, 2, 3], pa.int64()),
        "s": pa.array([1, 2, 3], pa.int16()),
        "fl": pa.array([0.1, 2, 3], pa.float32()),
    }
)
ROW_TYPE = T.ROW(
    [
        T.FIELD("a", T.INT()),
        T.FIELD("b", T.STRING()),
        T.FIELD("c", T.DOUBLE()),
        T.FIELD("d", T.DECIMAL(5, 2)),
        T.FIELD("e", T.DATE()),
        T.FIELD("f", T.BOOLEAN()),
        T.FIELD("g", T.TIMESTAMP(3)),
        T.FIELD("missing", T.BIGINT()),
        T.FIELD("H", T.BIGINT()),
        T.FIELD("s", T.SMALLINT()),
        T.FIELD("fl", T.FLOAT()),
    ]
)


@pytest.fixture
def table_file(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(TABLE, path, row_group_size=2)
    return path


def test_rows_of_the_declared_fields_a_missing_one_null(table_file):
    source = _source(table_file, ROW_TYPE, is_case_sensitive=False, is_utc_timestamp=True)
    stamp = datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)
    day = datetime.date(2024, 1, 2)
    records = read_all(source)
    assert records[0].as_dict() == {
        "a": 1,
        "b": "x",
        "c": 1.5,
        "d": decimal.Decimal("1.25"),
        "e": day,
        "f": True,
        "g": stamp,
        "missing": None,
        "H": 1,
        "s": 1,
        "fl": float(np.float32(0.1)),
    }
    assert records[1].as_dict() == {
        **records[0].as_dict(),
        **{"a": 2, "b": None, "c": 2.5, "d": None, "f": False, "H": 2, "s": 2, "fl": 2.0},
    }
    assert [r.a for r in records] == [1, 2, None]
    assert [r.f for r in records] == [True, False, None]
    assert [type(v) for v in records[0]] == [
        int,
        str,
        float,
        decimal.Decimal,
        datetime.date,
        bool,
        datetime.datetime,
        type(None),
        int,
        int,
        float,
    ]
    assert source.get_produced_type() == Types.ROW_NAMED(
        ["a", "b", "c", "d", "e", "f", "g", "missing", "H", "s", "fl"],
        [
            Types.INT(),
            Types.STRING(),
            Types.DOUBLE(),
            Types.BIG_DEC(),
            Types.SQL_DATE(),
            Types.BOOLEAN(),
            Types.SQL_TIMESTAMP(),
            Types.LONG(),
            Types.LONG(),
            Types.SHORT(),
            Types.FLOAT(),
        ],
    )


def test_names_are_case_sensitive_by_default(table_file):
    records = read_all(_source(table_file, T.ROW([T.FIELD("H", T.BIGINT())])))
    assert [r.H for r in records] == [None, None, None]


def test_a_column_of_another_type_fails_naming_file_column_and_types(table_file):
    with pytest.raises(FileFormatError) as failure:
        read_all(_source(table_file, T.ROW([T.FIELD("h", T.INT())])))
    message = str(failure.value)
    assert str(table_file) in message
    assert "column 'h' holds int64" in message
    assert "declare the field with the type the file has" in message


def test_a_file_that_is_not_parquet_fails_naming_it(tmp_path):
    path = tmp_path / "notes.parquet"
    path.write_text("not parquet")
    with pytest.raises(FileFormatError, match=r"notes\.parquet is not a readable Parquet file"):
        read_all(_source(path, T.ROW([T.FIELD("a", T.INT())])))


def test_pyflinks_signature_and_its_checks():
    row_type = T.ROW([T.FIELD("a", T.INT())])
    ParquetColumnarRowInputFormat(row_type, Configuration(), 512, True, False)
    with pytest.raises(ValueError, match=r"fs\.defaultFS.*configure the file system through"):
        ParquetColumnarRowInputFormat(
            row_type, Configuration().set_string("fs.defaultFS", "hdfs://nn:8020")
        )
    with pytest.raises(TypeError, match="only primitive types"):
        ParquetColumnarRowInputFormat(T.ROW([T.FIELD("a", T.ARRAY(T.INT()))]))
    with pytest.raises(TypeError, match=r"DataTypes\.ROW"):
        ParquetColumnarRowInputFormat(T.INT())
    with pytest.raises(TypeError, match="needs a BulkFormat"):
        FileSource.for_bulk_file_format(StreamFormat.text_line_format(), "/tmp")
    with pytest.raises(TypeError, match="needs a StreamFormat"):
        FileSource.for_record_stream_format(ParquetColumnarRowInputFormat(row_type), "/tmp")


def test_a_reader_restored_at_any_row_reads_the_rest_exactly(tmp_path):
    path = tmp_path / "in.parquet"
    table = pa.table({"k": pa.array(range(50), pa.int64()), "v": [f"v{i}" for i in range(50)]})
    pq.write_table(table, path, row_group_size=8)
    row_type = T.ROW([T.FIELD("k", T.BIGINT()), T.FIELD("v", T.STRING())])
    source = _source(path, row_type, batch_size=5)
    expected = read_all(source)
    assert [r.k for r in expected] == list(range(50))
    reader = source.create_reader(Ctx())
    consumed: list[Row] = []
    positions = set()
    while True:
        splits = reader.snapshot_splits()
        positions.update((offset, lines) for _, offset, lines in splits)
        restored = source.create_reader(Ctx())
        restored.restore_splits(splits)
        rest = []
        while (batch := restored.poll_batch(3)) is not None:
            rest.extend(batch)
        assert consumed + rest == expected
        batch = reader.poll_batch(3)
        if batch is None:
            break
        assert len(batch) <= 3
        consumed.extend(batch)
    # positions inside several row groups, and past a batch's first rows
    assert {offset for offset, _ in positions} >= {0, 1, 2, 3, 4, 5, 6}
    assert any(lines > 5 for _, lines in positions)


def test_a_consumer_of_columns_gets_numpy_columns_of_the_same_records(tmp_path):
    path = tmp_path / "in.parquet"
    n = 10_000
    table = pa.table(
        {
            "key": pa.array(np.arange(n) % 7, pa.int64()),
            "value": pa.array(np.arange(n) * 0.5),
            "ts": pa.array(np.arange(n), pa.int64()),
        }
    )
    pq.write_table(table, path, row_group_size=4096)
    row_type = T.ROW(
        [T.FIELD("key", T.BIGINT()), T.FIELD("value", T.DOUBLE()), T.FIELD("ts", T.BIGINT())]
    )
    source = _source(path, row_type)
    reader = source.create_reader(Ctx())
    batches = []
    while (batch := reader.poll_columns(1 << 20)) is not None:
        assert isinstance(batch, ColumnBatch)
        assert batch._records is None
        batches.append(batch)
    # 2048-row batches, as batch_size says, cut at row group ends
    assert [len(b) for b in batches] == [2048, 2048, 2048, 2048, 1808]
    assert batches[0].columns["key"].dtype == np.int64
    assert batches[0].columns["value"].dtype == np.float64
    keys = np.concatenate([b.columns["key"] for b in batches])
    assert np.array_equal(keys, np.arange(n) % 7)
    assert [r for b in batches for r in b.records()] == read_all(source)


# Instants (ms since the epoch) around New York's DST changes, and in winter and summer.
INSTANTS = [
    1704164645123,
    1719835200000,
    1710053999999,
    1710054000000,
    1730613599999,
    1730613600000,
]
# What a JVM with TZ set so reads them as (new java.sql.Timestamp(ms).toLocalDateTime(),
# Flink's reading when the timestamps are not UTC), recorded with Java 17.
JVM_WALL_CLOCK = {
    "America/New_York": [
        "2024-01-01T22:04:05.123",
        "2024-07-01T08:00",
        "2024-03-10T01:59:59.999",
        "2024-03-10T03:00",
        "2024-11-03T01:59:59.999",
        "2024-11-03T01:00",
    ],
    "Asia/Kolkata": ["2024-01-02T08:34:05.123", "2024-07-01T17:30"],
    ":Europe/Berlin": ["2024-01-02T04:04:05.123", "2024-07-01T14:00"],
    "Bogus/Zone": ["2024-01-02T03:04:05.123", "2024-07-01T12:00"],  # the JVM takes GMT
}


@pytest.mark.parametrize("tz", list(JVM_WALL_CLOCK))
def test_timestamps_not_utc_are_read_in_the_zone_a_jvm_here_would_take(tmp_path, monkeypatch, tz):
    monkeypatch.setenv("TZ", tz)
    expected = [datetime.datetime.fromisoformat(text) for text in JVM_WALL_CLOCK[tz]]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"t": pa.array(INSTANTS[: len(expected)], pa.timestamp("ms"))}), path)
    row_type = T.ROW([T.FIELD("t", T.TIMESTAMP(3))])
    assert [r.t for r in read_all(_source(path, row_type))] == expected
    utc = [r.t for r in read_all(_source(path, row_type, is_utc_timestamp=True))]
    epoch = datetime.datetime(1970, 1, 1)
    assert utc == [epoch + datetime.timedelta(milliseconds=ms) for ms in INSTANTS[: len(expected)]]


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe"])
def test_without_pyarrows_zone_database_the_wall_clock_is_the_same(zone):
    """Around every DST change of 2024, and a null."""
    import pyarrow.compute as pc

    from weir.datastream.formats.parquet import _wall_clock_by_value

    hours = np.arange(1704067200000, 1735689600000, 1_800_000, dtype=np.int64)
    instants = pa.array([*hours.tolist(), None], pa.timestamp("ms", tz="UTC"))
    expected = pc.local_timestamp(instants.cast(pa.timestamp("ms", tz=zone)))
    assert _wall_clock_by_value(instants, zone).equals(expected)
