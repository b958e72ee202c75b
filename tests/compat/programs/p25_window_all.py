"""Non-keyed windows (window_all) on event time: tumbling with reduce and with a
ProcessAllWindowFunction, sliding with an AllWindowFunction (apply), and aggregate; the
timestamps are assigned at parallelism 2 and the windows (and the sinks) run at 1."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    ProcessAllWindowFunction,
)
from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


class Span(ProcessAllWindowFunction):
    def process(self, context, elements):
        w = context.window()
        yield "process [%d,%d) words=%s" % (w.start, w.end, sorted(e[1] for e in elements))


class Joined(AllWindowFunction):
    def apply(self, window, inputs):
        yield "apply [%d,%d) %s" % (
            window.start,
            window.end,
            "+".join(sorted(e[1] for e in inputs)),
        )


class Longest(AggregateFunction):
    def create_accumulator(self):
        return ""

    def add(self, value, accumulator):
        return max(accumulator, value[1], key=lambda s: (len(s), s))

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return max(acc_a, acc_b, key=lambda s: (len(s), s))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
data = [
    (10, "ant"),
    (250, "bee"),
    (120, "cat"),
    (610, "dove"),
    (480, "eel"),
    (900, "fox"),
    (1300, "gnu"),
    (1010, "hen"),
    (730, "ibis"),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(5)
).with_timestamp_assigner(EventTime())
words = env.from_collection(
    data, type_info=Types.TUPLE([Types.LONG(), Types.STRING()])
).assign_timestamps_and_watermarks(strategy)
tumbling = TumblingEventTimeWindows.of(Time.milliseconds(500))

(
    words.window_all(tumbling)
    .reduce(
        lambda a, b: (max(a[0], b[0]), ",".join(sorted((a[1] + "," + b[1]).split(",")))),
        output_type=Types.TUPLE([Types.LONG(), Types.STRING()]),
    )
    .print("reduce")
    .set_parallelism(1)
)
(
    words.window_all(tumbling)
    .process(Span(), output_type=Types.STRING())
    .print("process")
    .set_parallelism(1)
)
(
    words.window_all(SlidingEventTimeWindows.of(Time.milliseconds(1000), Time.milliseconds(500)))
    .apply(Joined(), output_type=Types.STRING())
    .print("apply")
    .set_parallelism(1)
)
(
    words.window_all(tumbling)
    .aggregate(Longest(), output_type=Types.STRING())
    .print("aggregate")
    .set_parallelism(1)
)
env.execute("window all")
