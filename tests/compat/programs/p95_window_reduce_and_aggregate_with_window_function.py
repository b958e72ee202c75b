"""reduce() and aggregate() on windows with a window function after them: the function sees
the one pre-aggregated element, the key and the window."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    AggregateFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from pyflink.datastream.window import TumblingEventTimeWindows


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Avg(AggregateFunction):
    def create_accumulator(self):
        return (0, 0)

    def add(self, value, acc):
        return (acc[0] + value[2], acc[1] + 1)

    def get_result(self, acc):
        return acc[0] / acc[1]

    def merge(self, a, b):
        return (a[0] + b[0], a[1] + b[1])


class Describe(ProcessWindowFunction):
    def process(self, key, context, elements):
        items = list(elements)
        yield "%s [%d,%d) %s" % (key, context.window().start, context.window().end, items)


class Apply(WindowFunction):
    def apply(self, key, window, inputs):
        yield "apply %s %d %s" % (key, window.max_timestamp(), list(inputs))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = env.from_collection(
    [("a", 1, 5), ("b", 2, 1), ("a", 3, 7), ("a", 12, 2), ("b", 14, 4)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
)
windowed = data.key_by(lambda x: x[0], key_type=Types.STRING()).window(
    TumblingEventTimeWindows.of(Time.milliseconds(10))
)
windowed.reduce(
    lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]),
    window_function=Describe(),
    output_type=Types.STRING(),
).print("reduce")
windowed.aggregate(Avg(), window_function=Apply(), output_type=Types.STRING()).print("aggregate")
windowed.aggregate(
    Avg(), accumulator_type=Types.TUPLE([Types.INT(), Types.INT()]), output_type=Types.DOUBLE()
).print("avg")
env.execute("window functions after pre-aggregation")
