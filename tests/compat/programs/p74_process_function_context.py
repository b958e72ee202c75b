"""What a ProcessFunction's and a KeyedProcessFunction's context tell about each record: its
timestamp, the current watermark, the current key, side outputs from the context, and a timer
registered from process_element firing in on_timer with its own context."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment, TimeDomain
from pyflink.datastream.functions import KeyedProcessFunction, ProcessFunction


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


odd = OutputTag("odd", Types.STRING())


class Plain(ProcessFunction):
    def process_element(self, value, ctx: ProcessFunction.Context):
        yield "plain %s ts=%s wm=%s" % (
            value,
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )
        if value[1] % 2:
            yield odd, "odd %s" % (value,)


class Keyed(KeyedProcessFunction):
    def process_element(self, value, ctx: KeyedProcessFunction.Context):
        ctx.timer_service().register_event_time_timer(value[1] + 5)
        yield "keyed key=%s ts=%s" % (ctx.get_current_key(), ctx.timestamp())

    def on_timer(self, timestamp, ctx: KeyedProcessFunction.OnTimerContext):
        yield "timer key=%s at=%s ts=%s domain=%s" % (
            ctx.get_current_key(),
            timestamp,
            ctx.timestamp(),
            ctx.time_domain() == TimeDomain.EVENT_TIME,
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
events = env.from_collection(
    [("a", 10), ("b", 11), ("a", 20), ("b", 3)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG()]),
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(2)).with_timestamp_assigner(
        First()
    )
)
plain = events.process(Plain(), output_type=Types.STRING())
plain.print()
plain.get_side_output(odd).print("side")
events.key_by(lambda e: e[0], key_type=Types.STRING()).process(
    Keyed(), output_type=Types.STRING()
).print()
env.execute("contexts")
