"""Keyed sliding event-time windows with a ProcessWindowFunction (context.window(), start, end,
max_timestamp, current_watermark), and reduce/aggregate combined with a ProcessWindowFunction
or WindowFunction. The out-of-orderness bound exceeds the data's time range, so every window
fires on the final watermark at end of input."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction, WindowFunction
from pyflink.datastream.window import SlidingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class ListWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield "process key=%s [%d,%d) max_ts=%d watermark=%d values=%s" % (
            key,
            w.start,
            w.end,
            w.max_timestamp(),
            context.current_watermark(),
            sorted(e[2] for e in elements),
        )


class LabelSum(ProcessWindowFunction):
    def process(self, key, context, elements):
        elements = list(elements)
        yield "reduce+process key=%s [%d,%d) n=%d sum=%d" % (
            key,
            context.window().start,
            context.window().end,
            len(elements),
            elements[0][2],
        )


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a + acc_b


class LabelCount(WindowFunction):
    def apply(self, key, window, inputs):
        for count in inputs:
            yield "aggregate+apply key=%s [%d,%d) count=%d" % (key, window.start, window.end, count)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("x", 100, 1),
    ("y", 250, 2),
    ("x", 420, 3),
    ("x", 310, 4),
    ("y", 90, 5),
    ("x", 1010, 6),
    ("y", 600, 7),
    ("x", 50, 8),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(30)
).with_timestamp_assigner(EventTime())
keyed = (
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
)
sliding = SlidingEventTimeWindows.of(Time.milliseconds(400), Time.milliseconds(200))

keyed.window(sliding).process(ListWindow(), output_type=Types.STRING()).print()
(
    keyed.window(sliding)
    .reduce(
        lambda a, b: (a[0], a[1], a[2] + b[2]),
        window_function=LabelSum(),
        output_type=Types.STRING(),
    )
    .print()
)
(
    keyed.window(sliding)
    .aggregate(
        Count(),
        window_function=LabelCount(),
        accumulator_type=Types.LONG(),
        output_type=Types.STRING(),
    )
    .print()
)
env.execute("sliding")
