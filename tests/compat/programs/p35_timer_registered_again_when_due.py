"""A due timer that an earlier on_timer of the same round registers again fires twice."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Reregister(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(1000)
        ctx.timer_service().register_event_time_timer(2000)
        return []

    def on_timer(self, timestamp, ctx):
        if timestamp == 1000:
            ctx.timer_service().register_event_time_timer(2000)
        yield "timer %s at %d" % (ctx.get_current_key(), timestamp)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
(
    env.from_collection([("a", 1)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()]))
    .assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .process(Reregister(), output_type=Types.STRING())
    .print()
)
env.execute("re-register a due timer")
