"""Keyed tumbling event-time windows with reduce, aggregate (AggregateFunction) and apply
(WindowFunction), out-of-order input within the watermark bound, and the timestamp each window
result carries downstream (read by a ProcessFunction)."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessFunction, WindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class MeanAndCount(AggregateFunction):
    def create_accumulator(self):
        return 0, 0

    def add(self, value, accumulator):
        return accumulator[0] + value[2], accumulator[1] + 1

    def get_result(self, accumulator):
        return "mean=%.2f n=%d" % (accumulator[0] / accumulator[1], accumulator[1])

    def merge(self, acc_a, acc_b):
        return acc_a[0] + acc_b[0], acc_a[1] + acc_b[1]


class Describe(WindowFunction):
    def apply(self, key, window, inputs):
        values = sorted(v[2] for v in inputs)
        yield "apply key=%s window=[%d,%d) max_ts=%d values=%s" % (
            key,
            window.start,
            window.end,
            window.max_timestamp(),
            values,
        )


class WithTimestamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield "%s @ %s" % (value, ctx.timestamp())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 1000, 1),
    ("b", 1500, 2),
    ("a", 1999, 3),
    ("a", 2000, 4),
    ("a", 1700, 5),
    ("b", 2400, 6),
    ("b", 1900, 7),
    ("a", 3500, 8),
    ("a", 3100, 9),
    ("b", 5200, 10),
    ("a", 5000, 11),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_millis(500)
).with_timestamp_assigner(EventTime())
row_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
keyed = (
    env.from_collection(data, type_info=row_type)
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
)
window = TumblingEventTimeWindows.of(Time.seconds(1))

(
    keyed.window(window)
    .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
    .process(WithTimestamp(), output_type=Types.STRING())
    .print("reduce")
)
(
    keyed.window(window)
    .reduce(lambda a, b: (a[0], min(a[1], b[1]), a[2] * b[2]), output_type=row_type)
    .print("reduce-typed")
)
(
    keyed.window(window)
    .aggregate(
        MeanAndCount(),
        accumulator_type=Types.TUPLE([Types.INT(), Types.INT()]),
        output_type=Types.STRING(),
    )
    .print("aggregate")
)
(
    keyed.window(window)
    .apply(Describe(), output_type=Types.STRING())
    .process(WithTimestamp(), output_type=Types.STRING())
    .print("apply")
)
env.execute("tumbling")
