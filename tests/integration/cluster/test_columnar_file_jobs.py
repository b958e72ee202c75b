"""CSV and Parquet files read by real jobs on the MiniCluster: the source hands its columns
to a batch function, whose output crosses a key-group edge into a keyed running sum
written exactly once; a TaskManager killed after a checkpoint completed, the job restores
the readers' positions (CSV: records read; Parquet: row group and rows) and commits
exactly the lines of a failure-free run. A file with a bad value fails the job naming
it."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_checkpoint_recovery import (
    await_condition,
    checkpointed_env,
    committed_lines,
    exactly_once_lines,
    kill_a_task_manager,
    latest_checkpoint_id,
)

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Types, WatermarkStrategy
from weir.core.errors import JobExecutionError
from weir.datastream import MapFunction, StreamExecutionEnvironment
from weir.datastream.connectors.file_system import FileSource
from weir.datastream.formats.csv import CsvReaderFormat, CsvSchema
from weir.datastream.formats.parquet import ParquetColumnarRowInputFormat
from weir.table import DataTypes

pytestmark = pytest.mark.spark

FILES = 3
ROWS_PER_FILE = 1_500
KEYS = 5
EVENT = Types.ROW_NAMED(["key", "value", "ts"], [Types.LONG(), Types.LONG(), Types.LONG()])
ROW_TYPE = DataTypes.ROW(
    [
        DataTypes.FIELD("key", DataTypes.BIGINT()),
        DataTypes.FIELD("value", DataTypes.BIGINT()),
        DataTypes.FIELD("ts", DataTypes.BIGINT()),
    ]
)


def _rows(f: int) -> list[tuple[int, int, int]]:
    base = f * ROWS_PER_FILE
    return [((base + i) % KEYS, base + i, 1_000 * (base + i)) for i in range(ROWS_PER_FILE)]


def write_inputs(directory: Path, kind: str) -> None:
    directory.mkdir()
    for f in range(FILES):
        rows = _rows(f)
        if kind == "csv":
            # A header, and a quoted first value with a line break in a comment column.
            lines = ["key,value,ts,note"] + [
                f'{k},{v},{t},"row {v}\nof file {f}"' for k, v, t in rows
            ]
            (directory / f"part-{f}.csv").write_text("\n".join(lines) + "\n")
        else:
            keys, values, stamps = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
            table = pa.table({"key": keys, "value": values, "ts": stamps})
            pq.write_table(table, directory / f"part-{f}.parquet", row_group_size=400)


def source_of(directory: Path, kind: str) -> FileSource:
    if kind == "csv":
        schema = (
            CsvSchema.builder()
            .add_number_column("key")
            .add_number_column("value")
            .add_number_column("ts")
            .add_string_column("note")
            .set_use_header()
            .build()
        )
        csv = CsvReaderFormat.for_schema(schema)
        return FileSource.for_record_stream_format(csv, str(directory)).build()
    parquet = ParquetColumnarRowInputFormat(ROW_TYPE, batch_size=256)
    return FileSource.for_bulk_file_format(parquet, str(directory)).build()


def expected_sums() -> Counter[str]:
    """One running sum line per record, in file order (the source runs at parallelism 1,
    so every key sees its records in sequence)."""
    lines: Counter[str] = Counter()
    sums = [0] * KEYS
    for f in range(FILES):
        for key, value, _ in _rows(f):
            sums[key] += 2 * value
            lines[f"{key},{sums[key]}"] += 1
    return lines


def doubled(columns):
    """A batch function over numpy columns: the source's columns, no Row built."""
    assert columns["value"].dtype == np.int64
    return {"key": columns["key"], "value": columns["value"] * 2, "ts": columns["ts"]}


class PacedPair(MapFunction):
    """(key, doubled value), a millisecond per record: chained to the source, it holds the
    reader back, so checkpoints and the fault find the reader in the middle of a file."""

    def map(self, event):
        time.sleep(0.001)  # the job's pace, not a synchronisation
        return (event.key, event.value)


def build(env: StreamExecutionEnvironment, source: FileSource, out: Path) -> None:
    events = env.from_source(source, WatermarkStrategy.no_watermarks(), "files").set_parallelism(1)
    (
        events.map_batches(doubled, EVENT, batch_format="numpy")
        .set_parallelism(1)
        .map(PacedPair(), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )


@pytest.mark.long
@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_a_killed_task_manager_restores_file_positions_exactly(cluster, tmp_path, kind):
    inputs = tmp_path / "in"
    write_inputs(inputs, kind)
    out = tmp_path / "out"
    # Polls of 100 rows at most, so that checkpoints fall inside files.
    env = checkpointed_env(tmp_path, {"python.fn-execution.bundle.size": "100"})
    build(env, source_of(inputs, kind), out)
    client = env.execute_async(f"{kind} files, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        # The third checkpoint holds a position inside the first file (the first one
        # may come before the reader's first poll).
        await_condition(lambda: latest_checkpoint_id(tmp_path) >= 3, "three checkpoints")
        kill_a_task_manager(gateway, job_id, random.Random(7), 0)
    client.get_job_execution_result().result()
    assert committed_lines(out) == expected_sums()


@pytest.mark.long
def test_records_and_columns_reach_their_consumers_alike(cluster, tmp_path):
    """The same files read as records (a per-record map) and as columns (a batch function)
    give the same Rows, of the source's declared type, at parallelism 2."""
    results = {}
    for kind in ("csv", "parquet"):
        inputs = tmp_path / kind
        write_inputs(inputs, kind)
        env = StreamExecutionEnvironment.get_execution_environment()
        env.set_parallelism(2)
        events = env.from_source(source_of(inputs, kind), WatermarkStrategy.no_watermarks(), kind)
        records = events.map(
            lambda e: (e.key, e.value, e.ts),
            output_type=Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()]),
        )
        columns = events.map_batches(lambda c: c["value"] + c["key"], Types.LONG(), "numpy")
        with records.execute_and_collect() as got:
            results[kind, "records"] = sorted(got)
        with columns.execute_and_collect() as got:
            results[kind, "columns"] = sorted(got)
    rows = sorted(r for f in range(FILES) for r in _rows(f))
    for kind in ("csv", "parquet"):
        assert results[kind, "records"] == rows
        assert results[kind, "columns"] == sorted(k + v for k, v, _ in rows)


@pytest.mark.long
def test_a_bad_value_fails_the_job_naming_file_row_and_column(cluster, tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "good.csv").write_text("1,2,3\n4,5,6\n")
    (inputs / "bad.csv").write_text("1,2,3\n4,five,6\n")
    schema = (
        CsvSchema.builder()
        .add_number_column("key")
        .add_number_column("value")
        .add_number_column("ts")
        .build()
    )
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(inputs)
    ).build()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    stream = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv")
    with pytest.raises(JobExecutionError) as failure:
        with stream.execute_and_collect() as results:
            list(results)
    message = str(failure.value)
    assert "bad.csv, row 2, column 'value': 'five' is not an integer" in message
    assert "Correct the file" in message


@pytest.mark.long
def test_columns_with_strings_and_nulls_cross_a_key_group_edge(cluster, tmp_path):
    """A CSV source's columns (numbers, strings, nulls, arrays) go over the network to a
    keyed per-record operator at another parallelism, which gets the reader's Rows."""
    path = tmp_path / "in.csv"
    lines = [f'{i % 7},"name {i}",{"" if i % 5 == 0 else i * 0.5},a;b{i}' for i in range(3000)]
    path.write_text("\n".join(lines) + "\n")
    schema = (
        CsvSchema.builder()
        .add_number_column("key", DataTypes.INT())
        .add_string_column("name")
        .add_number_column("value", DataTypes.DOUBLE())
        .add_array_column("tags")
        .set_null_value("")
        .build()
    )
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(path)
    ).build()
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    rows = env.from_source(source, WatermarkStrategy.no_watermarks(), "csv").set_parallelism(1)
    seen = rows.key_by(lambda r: r.key).map(
        lambda r: (r.key, r.name, r.value, r.tags, type(r.tags).__name__, sorted(r.as_dict())),
        output_type=Types.PICKLED_BYTE_ARRAY(),
    )
    with seen.execute_and_collect() as results:
        got = sorted(results, key=lambda t: t[1])
    expected = sorted(
        (
            (
                i % 7,
                f"name {i}",
                None if i % 5 == 0 else i * 0.5,
                ["a", f"b{i}"],
                "list",
                sorted(["key", "name", "value", "tags"]),
            )
            for i in range(3000)
        ),
        key=lambda t: t[1],
    )
    assert got == expected
