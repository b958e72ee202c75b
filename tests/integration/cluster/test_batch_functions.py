"""map_batches and batch sinks on the MiniCluster: each batch format through real tasks,
chained with per-record operators on either side and across a network edge, a batch
sink reading columns, the event-time rule, and exactly-once output across a killed
TaskManager."""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_checkpoint_recovery import (
    Paced,
    await_condition,
    checkpointed_env,
    committed_lines,
    exactly_once_lines,
    expected_lines,
    kill_a_task_manager,
)

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Duration, Types, WatermarkStrategy
from weir.common.watermark_strategy import TimestampAssigner
from weir.core.columnar import ColumnBatch
from weir.core.errors import JobExecutionError
from weir.datastream import (
    BatchSinkFunction,
    MapBatchesFunction,
    MapFunction,
    StreamExecutionEnvironment,
)
from weir.datastream.connectors.number_seq import NumberSequenceSource

pytestmark = pytest.mark.spark

PAIR = Types.TUPLE([Types.LONG(), Types.DOUBLE()])
BID = Types.ROW_NAMED(["auction", "price"], [Types.LONG(), Types.DOUBLE()])


def _env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def test_each_format_chains_with_per_record_functions_on_both_sides(cluster):
    env = _env()
    pairs = env.from_collection([(i, i / 2) for i in range(1000)], type_info=PAIR).map(
        lambda p: (p[0], p[1] + 1), output_type=PAIR
    )
    numpy_out = pairs.map_batches(
        lambda c: {"f0": c["f0"], "f1": c["f1"] * 2}, output_type=PAIR, batch_format="numpy"
    )
    arrow_out = numpy_out.map_batches(
        lambda b: pa.RecordBatch.from_arrays(
            [b.column(0), pc.add(b.column(1), 1.0)], names=["f0", "f1"]
        ),
        output_type=PAIR,
        batch_format="arrow",
    )
    pandas_out = arrow_out.map_batches(
        lambda df: df[df["f0"] % 10 == 0], output_type=PAIR, batch_format="pandas"
    )
    listed = pandas_out.map_batches(lambda records: [r[0] for r in records], Types.LONG())
    with listed.map(lambda a: a + 1, output_type=Types.LONG()).execute_and_collect() as results:
        assert sorted(results) == [i + 1 for i in range(0, 1000, 10)]
    with arrow_out.execute_and_collect() as results:
        assert sorted(results) == [(i, (i / 2 + 1) * 2 + 1) for i in range(1000)]


class Euros(MapBatchesFunction):
    def open(self, runtime_context):
        self.rate = 0.908

    def map_batches(self, bids):
        return {"auction": bids["auction"], "price": bids["price"] * self.rate}


def test_rows_keep_their_names_through_columns_and_across_the_network(cluster):
    env = _env(2)
    bids = env.from_collection([(i % 7, float(i)) for i in range(700)], type_info=BID)
    converted = bids.map_batches(Euros(), output_type=BID, batch_format="numpy")
    totals = converted.key_by(lambda bid: bid.auction).reduce(
        lambda a, b: type(a)(auction=a.auction, price=a.price + b.price)
    )
    with totals.execute_and_collect() as results:
        final = {}
        for row in results:
            final[row.auction] = row.price
    expected = {k: sum(float(i) for i in range(700) if i % 7 == k) * 0.908 for k in range(7)}
    assert final.keys() == expected.keys()
    for key, total in expected.items():
        assert final[key] == pytest.approx(total)


class CountingBatchSink(BatchSinkFunction):
    """Counts what it gets and how: batches, and whether they came as columns."""

    def __init__(self, out: str) -> None:
        self.out = out

    def open(self, runtime_context):
        self.batches = self.columnar = self.records = 0

    def invoke_batch(self, batch, context):
        self.batches += 1
        self.records += len(batch)
        if isinstance(batch, ColumnBatch):
            self.columnar += 1
            assert batch._records is None  # read as columns, never as records
            assert batch.columns["f0"].dtype == np.int64

    def close(self):
        Path(self.out).write_text(f"{self.batches} {self.columnar} {self.records}")


def test_a_batch_sink_reads_columns_without_records_and_a_list_sink_gets_lists(cluster, tmp_path):
    env = _env()
    numbers = env.from_source(
        NumberSequenceSource(0, 99_999), WatermarkStrategy.no_watermarks(), "numbers"
    )
    out = tmp_path / "columnar"
    numbers.map_batches(lambda xs: xs + 1, Types.LONG(), batch_format="numpy").add_sink(
        CountingBatchSink(str(out))
    )
    env.execute("batch sink")
    batches, columnar, records = map(int, out.read_text().split())
    assert records == 100_000
    assert batches == columnar > 1


class Stamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value


def test_a_batch_function_that_drops_timestamped_records_is_refused_by_name(cluster):
    env = _env()
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_millis(0)
    ).with_timestamp_assigner(Stamp())
    stamped = env.from_collection(
        list(range(100)), type_info=Types.LONG()
    ).assign_timestamps_and_watermarks(strategy)
    kept = stamped.map_batches(lambda xs: xs * 3, Types.LONG(), batch_format="numpy")
    with kept.execute_and_collect() as results:
        assert sorted(results) == [3 * i for i in range(100)]
    dropped = stamped.map_batches(lambda xs: xs[xs > 50], Types.LONG(), batch_format="numpy")
    with pytest.raises(JobExecutionError, match="with event timestamps into .* records"):
        with dropped.execute_and_collect() as results:
            list(results)


def test_columnar_formats_need_the_input_type():
    env = StreamExecutionEnvironment.get_execution_environment()
    untyped = env.from_collection([(1, 2)])
    with pytest.raises(TypeError, match="needs to know the fields of its input"):
        untyped.map_batches(lambda c: c, batch_format="numpy")


def test_exactly_once_through_a_batch_function_across_a_killed_task_manager(cluster, tmp_path):
    records = 6_000
    out = tmp_path / "out"
    env = checkpointed_env(tmp_path, {})
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map_batches(lambda xs: xs, Types.LONG(), batch_format="numpy")
        .set_parallelism(1)
        .map(Paced(0.001))
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .map(lambda kv: f"{kv[0]},{kv[1]}", output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    client = env.execute_async("batch function, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: list(tmp_path.glob("checkpoints/*/chk-*")), "a checkpoint")
        kill_a_task_manager(gateway, job_id, random.Random(1), 0)
    client.get_job_execution_result().result()
    assert committed_lines(out) == expected_lines(records)


class PacedLine(MapFunction):
    """Formats a running sum, a millisecond per record so faults hit a running job."""

    def map(self, value):
        time.sleep(0.001)  # the job's pace, not a synchronisation
        return f"{value[0]},{value[1]}"


def test_exactly_once_through_columns_a_keyed_edge_and_a_vectorised_sum(cluster, tmp_path):
    """Columns from a batch function cross a key-group edge as Arrow buffers and are
    summed per key a batch at a time; a TaskManager is killed mid-job: the committed
    output is exactly the per-record running sums."""
    records = 6_000
    out = tmp_path / "out"
    env = checkpointed_env(tmp_path, {})
    longs = Types.TUPLE([Types.LONG(), Types.LONG()])
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map_batches(lambda xs: {"f0": xs % 4, "f1": xs + 1}, longs, batch_format="numpy")
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .sum(1)
        .map(PacedLine(), output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    client = env.execute_async("columns through a keyed sum, one TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(lambda: list(tmp_path.glob("checkpoints/*/chk-*")), "a checkpoint")
        kill_a_task_manager(gateway, job_id, random.Random(2), 0)
    client.get_job_execution_result().result()
    assert committed_lines(out) == expected_lines(records)


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_built_in_window_counts_equal_a_user_count_on_both_backends(cluster, backend):
    from weir.common import Configuration, Time
    from weir.datastream.aggregate_functions import Avg, Count
    from weir.datastream.functions import AggregateFunction
    from weir.datastream.window import TumblingEventTimeWindows

    class UserCount(AggregateFunction):
        def create_accumulator(self):
            return 0

        def add(self, value, accumulator):
            return accumulator + 1

        def get_result(self, accumulator):
            return accumulator

        def merge(self, a, b):
            return a + b

    def run(aggregate, columns: bool):
        configuration = Configuration()
        configuration.set_string("state.backend.type", backend)
        env = StreamExecutionEnvironment.get_execution_environment(configuration)
        env.set_parallelism(2)
        numbers = env.from_source(
            NumberSequenceSource(0, 19_999), WatermarkStrategy.no_watermarks(), "n"
        ).set_parallelism(1)
        if columns:
            pairs = numbers.map_batches(
                lambda xs: {"f0": xs % 7, "f1": xs},
                Types.TUPLE([Types.LONG(), Types.LONG()]),
                batch_format="numpy",
            )
        else:
            pairs = numbers.map(
                lambda x: (x % 7, x), output_type=Types.TUPLE([Types.LONG(), Types.LONG()])
            )
        stamped = pairs.assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Stamp1())
        )
        windowed = stamped.key_by(lambda r: r[0]).window(
            TumblingEventTimeWindows.of(Time.milliseconds(1000))
        )
        with windowed.aggregate(aggregate).execute_and_collect() as results:
            return sorted(results)

    assert run(Count(), columns=True) == run(UserCount(), columns=False)
    assert run(Avg(1), columns=True) == run(Avg(1), columns=False)


class Stamp1(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


def test_keyed_map_batches_over_columns_keeps_a_count_per_key(cluster):
    from weir.datastream import KeyedBatchFunction
    from weir.datastream.state import ValueStateDescriptor

    class Totals(KeyedBatchFunction):
        def open(self, runtime_context):
            self.total = runtime_context.get_state(ValueStateDescriptor("t", Types.LONG()))

        def map_batches(self, key, columns):
            total = (self.total.value() or 0) + int(columns["f1"].sum())
            self.total.update(total)
            return {"f0": np.array([key]), "f1": np.array([total])}

    env = _env(2)
    longs = Types.TUPLE([Types.LONG(), Types.LONG()])
    pairs = env.from_collection([(i % 3, i) for i in range(3000)], type_info=longs)
    totals = pairs.key_by(lambda p: p[0]).map_batches(Totals(), longs, batch_format="numpy")
    with totals.execute_and_collect() as results:
        final = {}
        for key, total in results:
            assert total >= final.get(key, 0)
            final[key] = total
    assert final == {k: sum(i for i in range(3000) if i % 3 == k) for k in range(3)}


class StampF1(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class PacedPairs(MapBatchesFunction):
    """Numbers ``xs`` as columns ``(xs % 50, xs)``, 20 microseconds a number, so that
    windows fire one after the other while faults hit a running job."""

    def map_batches(self, xs):
        time.sleep(len(xs) * 2e-5)  # the job's pace, not a synchronisation
        return {"f0": xs % 50, "f1": xs}


@pytest.mark.long
@pytest.mark.parametrize("backend", ["hashmap", "rocksdb"])
def test_exactly_once_through_columnar_windows_across_a_killed_task_manager(
    cluster, tmp_path, backend
):
    """A built-in Sum over columns in tumbling event-time windows (kept as arrays that a
    checkpoint borrows on the hashmap backend, or in RocksDB blocks), checkpointed every
    100 ms; a TaskManager is killed after a random number of checkpoints: the committed
    output is exactly one sum per key and window."""
    from weir.common import Time
    from weir.datastream.aggregate_functions import Sum
    from weir.datastream.window import TumblingEventTimeWindows

    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    records, size = 200_000, 1_000
    out = tmp_path / "out"
    config = {"state.backend.type": backend, "execution.checkpointing.num-retained": "1000"}
    env = checkpointed_env(tmp_path, config, interval_ms=100)
    longs = Types.TUPLE([Types.LONG(), Types.LONG()])
    (
        env.from_source(
            NumberSequenceSource(0, records - 1), WatermarkStrategy.no_watermarks(), "numbers"
        )
        .set_parallelism(1)
        .map_batches(PacedPairs(), longs, batch_format="numpy")
        .set_parallelism(1)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(StampF1())
        )
        .set_parallelism(1)
        .key_by(lambda kv: kv[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(size)))
        .aggregate(Sum(1), output_type=Types.LONG())
        .map(str, output_type=Types.STRING())
        .sink_to(exactly_once_lines(out))
    )
    client = env.execute_async("columnar windows, one TaskManager killed")
    job_id = str(client.get_job_id())
    wanted = rng.randint(1, 8)
    with DispatcherGateway(cluster.address) as gateway:
        await_condition(
            lambda: len(list(tmp_path.glob("checkpoints/*/chk-*/_metadata"))) >= wanted,
            f"{wanted} checkpoints (seed {seed})",
        )
        kill_a_task_manager(gateway, job_id, rng, 0)
    client.get_job_execution_result().result()
    expected = Counter(
        str(sum(x for x in range(start, start + size) if x % 50 == k))
        for start in range(0, records, size)
        for k in range(50)
    )
    assert committed_lines(out) == expected, f"seed {seed}"
