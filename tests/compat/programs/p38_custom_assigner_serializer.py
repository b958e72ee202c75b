"""A user WindowAssigner returning TimeWindowSerializer from get_window_serializer."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.window import (
    EventTimeTrigger,
    TimeWindow,
    TimeWindowSerializer,
    WindowAssigner,
)


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Seconds(WindowAssigner):
    def assign_windows(self, element, timestamp, context):
        start = timestamp - timestamp % 1000
        return [TimeWindow(start, start + 1000)]

    def get_default_trigger(self, env):
        return EventTimeTrigger.create()

    def get_window_serializer(self):
        return TimeWindowSerializer()

    def is_event_time(self):
        return True


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
(
    env.from_collection(
        [("a", 100, 1), ("a", 900, 2), ("a", 1200, 4)],
        type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
    )
    .assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .window(Seconds())
    .reduce(lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]))
    .print()
)
env.execute("custom assigner")
