"""window_all at the default parallelism: every element has one key, so one subtask fires
every window, and print shows which; count windows and an aggregate over the whole stream."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction
from pyflink.datastream.window import CountTumblingWindowAssigner, TumblingEventTimeWindows


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Collect(AggregateFunction):
    def create_accumulator(self):
        return []

    def add(self, value, accumulator):
        return [*accumulator, value[0]]

    def get_result(self, accumulator):
        return ",".join(sorted(accumulator))

    def merge(self, a, b):
        return a + b


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
data = [("a", 1), ("b", 2), ("c", 6), ("d", 7), ("e", 12)]
stamped = env.from_collection(
    data, type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
)
stamped.window_all(TumblingEventTimeWindows.of(Time.milliseconds(5))).aggregate(
    Collect(), output_type=Types.STRING()
).print("tumbling")
env.from_collection([1, 2, 3, 4, 5], type_info=Types.INT()).window_all(
    CountTumblingWindowAssigner.of(2)
).reduce(lambda a, b: a + b, output_type=Types.INT()).print("count")
env.execute("window all")
