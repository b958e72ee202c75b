"""Event-time timers of many keys: registered twice (one firing), deleted, registered from
on_timer, fired in timestamp order across keys by the watermarks of a bounded input."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Timers(KeyedProcessFunction):
    def process_element(self, value, ctx):
        service = ctx.timer_service()
        at = value[1] + 10
        service.register_event_time_timer(at)
        service.register_event_time_timer(at)
        if value[0] == "c":
            service.delete_event_time_timer(at)
            service.register_event_time_timer(at + 1)

    def on_timer(self, timestamp, ctx):
        yield "%s fired at %d wm=%d" % (
            ctx.get_current_key(),
            timestamp,
            ctx.timer_service().current_watermark(),
        )
        if timestamp < 40 and ctx.get_current_key() == "a":
            ctx.timer_service().register_event_time_timer(timestamp + 25)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
data = [("a", 5), ("b", 3), ("c", 8), ("a", 1), ("b", 20), ("d", 2)]
env.from_collection(
    data, type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
).key_by(lambda e: e[0], key_type=Types.STRING()).process(
    Timers(), output_type=Types.STRING()
).print()
env.execute("timers")
