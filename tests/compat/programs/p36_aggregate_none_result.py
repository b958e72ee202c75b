"""A window whose AggregateFunction result is None emits nothing."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class MaxPositive(AggregateFunction):
    def create_accumulator(self):
        return []

    def add(self, value, acc):
        return [*acc, value[2]] if value[2] > 0 else acc

    def get_result(self, acc):
        return max(acc) if acc else None

    def merge(self, a, b):
        return a + b


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
data = [("a", 100, 5), ("a", 200, 7), ("b", 300, -1), ("a", 1500, -3)]
(
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    .assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .window(TumblingEventTimeWindows.of(Time.seconds(1)))
    .aggregate(
        MaxPositive(),
        accumulator_type=Types.PICKLED_BYTE_ARRAY(),
        output_type=Types.PICKLED_BYTE_ARRAY(),
    )
    .map(lambda v: "max=%s" % (v,), output_type=Types.STRING())
    .print()
)
env.execute("aggregate none")
