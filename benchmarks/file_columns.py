"""Files read into q2 (key by key, 10 s tumbling event-time windows, the built-in Count):
a Parquet and a CSV file of ``--rows`` rows (key, value, timestamp), read by FileSource
as columns (the source hands its ColumnBatches to the window aggregate), the same job fed
records (the same reader, its poll_columns hidden, so it hands over Rows), and a
reference loop of pyarrow and numpy alone (read the file in batches, count per key and
window with ``np.bincount``).

Rounds interleave every variant, so their figures come from the same load; a job's time
runs from its reader's first poll to its sink's last window result (the one-row files
start the MiniCluster first). Reports medians, each round's figures, and the load
average. Every run must count every row.

    python benchmarks/file_columns.py [--rows N] [--rounds R] [--keys K]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from weir.common import Time, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.datastream import BatchSinkFunction, StreamExecutionEnvironment
from weir.datastream.aggregate_functions import Count
from weir.datastream.connectors.file_system import FileSource
from weir.datastream.formats.csv import CsvReaderFormat, CsvSchema
from weir.datastream.formats.parquet import ParquetColumnarRowInputFormat
from weir.datastream.window import TumblingEventTimeWindows
from weir.table import DataTypes

WINDOW_MS = 10_000
ROW_TYPE = DataTypes.ROW(
    [
        DataTypes.FIELD("key", DataTypes.BIGINT()),
        DataTypes.FIELD("value", DataTypes.BIGINT()),
        DataTypes.FIELD("ts", DataTypes.BIGINT()),
    ]
)


def write_files(directory: pathlib.Path, rows: int, keys: int) -> dict[str, pathlib.Path]:
    """``rows`` rows, a millisecond apart, in a Parquet and a CSV file (and one-row files of
    each, for the start-up runs)."""
    i = np.arange(rows, dtype=np.int64)
    table = pa.table({"key": i * 7919 % keys, "value": (i * 31) % 1000, "ts": i})
    paths = {}
    for name, part in (("", table), ("one-", table.slice(0, 1))):
        pq.write_table(part, directory / f"{name}rows.parquet", row_group_size=1 << 20)
        pa_csv.write_csv(
            part, directory / f"{name}rows.csv", pa_csv.WriteOptions(include_header=False)
        )
        paths[f"{name}parquet"] = directory / f"{name}rows.parquet"
        paths[f"{name}csv"] = directory / f"{name}rows.csv"
    return paths


def file_source(path: pathlib.Path) -> FileSource:
    if path.suffix == ".parquet":
        fmt = ParquetColumnarRowInputFormat(ROW_TYPE, batch_size=65_536)
        return FileSource.for_bulk_file_format(fmt, str(path)).build()
    schema = (
        CsvSchema.builder()
        .add_number_column("key")
        .add_number_column("value")
        .add_number_column("ts")
        .build()
    )
    return FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), str(path)
    ).build()


class _TimedReader:
    """The FileSource's reader, noting when it was first polled; ``columns``: whether it
    hands over columns (poll_columns) or, hidden that, Rows."""

    def __init__(self, reader: Any, stats: str) -> None:
        self._reader = reader
        self._stats = stats
        self._first = 0

    def _note(self) -> None:
        if not self._first:
            self._first = time.perf_counter_ns()
            pathlib.Path(self._stats, "source").write_text(str(self._first))

    def poll_batch(self, max_records: int) -> Any:
        self._note()
        return self._reader.poll_batch(max_records)

    def close(self) -> None:
        self._reader.close()


class _TimedColumnsReader(_TimedReader):
    def poll_columns(self, max_records: int) -> Any:
        self._note()
        return self._reader.poll_columns(max_records)


class Timed:
    """A FileSource whose reader notes its first poll; with ``columns`` False it hands
    over records only."""

    def __init__(self, source: FileSource, stats: str, columns: bool) -> None:
        self._source = source
        self._stats = stats
        self._columns = columns

    def is_bounded(self) -> bool:
        return True

    def create_reader(self, context: Any) -> _TimedReader:
        reader = self._source.create_reader(context)
        kind = _TimedColumnsReader if self._columns else _TimedReader
        return kind(reader, self._stats)

    def get_produced_type(self) -> Any:
        return self._source.get_produced_type()


class EventTime(TimestampAssigner):
    """The row's ts: one field, which a batch of columns gives as a column."""

    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class SummingSink(BatchSinkFunction):
    """Adds up the window counts (they must come to the rows read) into a file."""

    def __init__(self, out: str) -> None:
        self.out = out

    def open(self, runtime_context):
        self.total = 0
        self.windows = 0
        self.last = 0

    def invoke_batch(self, batch, context):
        values = batch.columns["f0"] if hasattr(batch, "columns") else np.asarray(list(batch))
        self.total += int(np.sum(values))
        self.windows += len(batch)
        self.last = time.perf_counter_ns()

    def close(self):
        pathlib.Path(self.out).write_text(json.dumps([self.total, self.windows, self.last]))


def run_job(path: pathlib.Path, stats: pathlib.Path, columns: bool) -> tuple[float, int]:
    """q2 over the file at ``path``: seconds from the reader's first poll to the sink's
    last window result, and the rows the windows counted."""
    out = stats / "sink"
    source = Timed(file_source(path), str(stats), columns)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    (
        env.from_source(source, strategy, "files")
        .key_by(lambda row: row[0], key_type=Types.LONG())
        .window(TumblingEventTimeWindows.of(Time.milliseconds(WINDOW_MS)))
        .aggregate(Count(), output_type=Types.LONG())
        .add_sink(SummingSink(str(out)))
    )
    env.execute("bench-file-columns")
    total, _, last = json.loads(out.read_text())
    first = int((stats / "source").read_text())
    return (last - first) / 1e9, total


def reference(path: pathlib.Path, keys: int) -> tuple[float, int]:
    """pyarrow and numpy alone: counts per key of each window, a batch at a time (one
    ``np.bincount`` over the batch's windows), and the seconds it took."""
    started = time.perf_counter()
    counts: dict[int, Any] = {}
    if path.suffix == ".parquet":
        batches = pq.ParquetFile(path).iter_batches(batch_size=65_536, use_threads=False)
    else:
        read = pa_csv.ReadOptions(column_names=["key", "value", "ts"], use_threads=False)
        batches = pa_csv.open_csv(path, read_options=read)
    for batch in batches:
        key = batch.column(0).to_numpy()
        window = batch.column(2).to_numpy() // WINDOW_MS
        first = int(window.min())
        spans = int(window.max()) - first + 1
        found = np.bincount((window - first) * keys + key, minlength=spans * keys)
        for w, per_key in enumerate(found.reshape(spans, keys)):
            total = counts.get(first + w)
            counts[first + w] = per_key if total is None else total + per_key
    return time.perf_counter() - started, int(sum(int(c.sum()) for c in counts.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="weir-bench-files-") as tmp:
        directory = pathlib.Path(tmp)
        paths = write_files(directory, args.rows, args.keys)
        rates: dict[tuple[str, str], list[float]] = {}
        run_job(paths["one-parquet"], directory, True)  # the MiniCluster starts
        for _ in range(args.rounds):
            for kind in ("parquet", "csv"):
                for name, columns in (("Weir, columns", True), ("Weir, records", False)):
                    seconds, total = run_job(paths[kind], directory, columns)
                    if total != args.rows:
                        msg = f"{name} over {kind} counted {total} rows of {args.rows}"
                        raise AssertionError(msg)
                    rates.setdefault((kind, name), []).append(args.rows / seconds)
                    print(f"  {kind} {name}: {args.rows / seconds / 1e6:.2f} M rows/s", flush=True)
                seconds, total = reference(paths[kind], args.keys)
                assert total == args.rows, total
                rates.setdefault((kind, "pyarrow + numpy loop"), []).append(args.rows / seconds)
                print(f"  {kind} reference: {args.rows / seconds / 1e6:.2f} M rows/s", flush=True)
        for (kind, name), values in rates.items():
            each = ", ".join(f"{v / 1e6:.2f}" for v in values)
            median = statistics.median(values) / 1e6
            print(f"{kind:8s} {name:22s} {median:7.2f} M rows/s ({each})", flush=True)
    print(
        f"(rows: {args.rows}; keys: {args.keys}; cores: {os.cpu_count()}; "
        f"load: {os.getloadavg()[0]:.1f}; medians of {args.rounds})"
    )


if __name__ == "__main__":
    main()
