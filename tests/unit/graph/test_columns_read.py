"""The columns a keyed window's input edge carries: only the key and the built-in
aggregate's value field, where nothing reads a record whole."""

from __future__ import annotations

import cloudpickle

from weir.common import Time, Types, WatermarkStrategy
from weir.datastream import OutputTag, StreamExecutionEnvironment
from weir.datastream.aggregate_functions import Count, Sum
from weir.datastream.functions import AggregateFunction, ReduceFunction
from weir.datastream.window import (
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)

BIDS = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()])


class First(ReduceFunction):
    def reduce(self, a, b):
        return a


class Counting(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


def read_by_window(build) -> object:
    """``columns_read`` of the edge into the window ``build(keyed)`` makes."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    keyed = (
        env.from_collection([(1, 2, 3)], type_info=BIDS)
        .assign_timestamps_and_watermarks(WatermarkStrategy.for_monotonous_timestamps())
        .key_by(lambda bid: bid[0])
    )
    build(keyed).print()
    graph = env._job_graph(clear=False).job_graph
    keyed_edges = [e for e in graph.edges if e.partitioner.name == "KEY_GROUP"]
    assert len(keyed_edges) == 1
    return cloudpickle.loads(keyed_edges[0].partitioner_payload).get("columns_read")


TEN_SECONDS = TumblingEventTimeWindows.of(Time.seconds(10))


def test_a_builtin_count_reads_the_key_and_a_sum_its_field_too():
    assert read_by_window(lambda k: k.window(TEN_SECONDS).aggregate(Count())) == (0,)
    assert read_by_window(lambda k: k.window(TEN_SECONDS).aggregate(Sum(2))) == (0, 2)


def test_whatever_may_read_a_record_whole_gets_every_column():
    late = OutputTag("late", BIDS)
    for build in (
        lambda k: k.window(TEN_SECONDS).side_output_late_data(late).aggregate(Count()),
        lambda k: k.window(TEN_SECONDS).allowed_lateness(1000).aggregate(Count()),
        lambda k: k.window(TEN_SECONDS).reduce(First()),
        lambda k: k.window(TEN_SECONDS).aggregate(Counting()),
        lambda k: k.window(TEN_PROCESSING_SECONDS).aggregate(Counting()),
    ):
        assert read_by_window(build) is None


TEN_PROCESSING_SECONDS = TumblingProcessingTimeWindows.of(Time.seconds(10))


def test_processing_time_windows_read_the_key_and_field_whatever_their_lateness():
    """No record is late in processing time (Flink's windows then have no lateness and
    send nothing to a late-data side output): only the aggregate reads the records."""
    late = OutputTag("late", BIDS)
    assert read_by_window(lambda k: k.window(TEN_PROCESSING_SECONDS).aggregate(Count())) == (0,)
    for build in (
        lambda k: k.window(TEN_PROCESSING_SECONDS).aggregate(Sum(2)),
        lambda k: k.window(TEN_PROCESSING_SECONDS).allowed_lateness(1000).aggregate(Sum(2)),
        lambda k: k.window(TEN_PROCESSING_SECONDS).side_output_late_data(late).aggregate(Sum(2)),
    ):
        assert read_by_window(build) == (0, 2)
