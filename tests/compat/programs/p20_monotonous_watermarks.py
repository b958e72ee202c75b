"""for_monotonous_timestamps with periodic watermarks switched off (auto-watermark interval 0):
the watermark seen while processing elements, timers registered from on_timer while the final
watermark fires them (they fire too), a processing-time timer that must not print, and what
ctx.timestamp() is on a stream that never had timestamps assigned."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessFunction


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Chain(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 10)
        if value[0] == "j":
            ctx.timer_service().register_processing_time_timer(
                ctx.timer_service().current_processing_time() + 3600 * 1000
            )
        yield "element %s ts=%s watermark=%s" % (
            value,
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )

    def on_timer(self, timestamp, ctx):
        if timestamp % 100 < 30:
            ctx.timer_service().register_event_time_timer(timestamp + 10)
        yield "timer %s at=%s domain=%s watermark=%s" % (
            ctx.get_current_key(),
            timestamp,
            ctx.time_domain(),
            ctx.timer_service().current_watermark(),
        )


class NoTimestamps(ProcessFunction):
    def process_element(self, value, ctx):
        yield "untimed %s ts=%s watermark=%s" % (
            value,
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
data = [("k", 100), ("k", 200), ("j", 300), ("k", 400)]
row_type = Types.TUPLE([Types.STRING(), Types.LONG()])
source = env.from_collection(data, type_info=row_type)
(
    source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .process(Chain(), output_type=Types.STRING())
    .print("timed")
)
source.process(NoTimestamps(), output_type=Types.STRING()).print()
env.execute("monotonous")
