"""Event-time timers in a KeyedProcessFunction: ctx.timestamp() from a TimestampAssigner,
duplicate registrations firing once, a deleted timer not firing, and every timer firing on
the final watermark at end of input (the out-of-orderness bound exceeds the data's time
range, so no timer can fire earlier)."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Timers(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ts = ctx.timestamp()
        ctx.timer_service().register_event_time_timer(ts + 100)
        ctx.timer_service().register_event_time_timer(ts + 100)
        if value[2] == "cancel":
            ctx.timer_service().delete_event_time_timer(ts + 100)
        else:
            ctx.timer_service().register_event_time_timer(ts + 50)
        yield "element key=%s value=%s ts=%s" % (ctx.get_current_key(), value[2], ts)

    def on_timer(self, timestamp, ctx):
        yield "timer key=%s at=%s ctx_ts=%s domain=%s watermark=%s" % (
            ctx.get_current_key(),
            timestamp,
            ctx.timestamp(),
            ctx.time_domain(),
            ctx.timer_service().current_watermark(),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 1000, "x"),
    ("b", 1200, "y"),
    ("a", 900, "cancel"),
    ("a", 1500, "z"),
    ("b", 1100, "w"),
    ("c", 3000, "cancel"),
    ("a", 1000, "again"),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(60)
).with_timestamp_assigner(EventTime())
(
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()]))
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .process(Timers(), output_type=Types.STRING())
    .print()
)
env.execute("event time timers")
