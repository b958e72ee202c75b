"""Watermark strategies as functions see them: monotonous, bounded out-of-orderness, no
watermarks with a timestamp assigner; record timestamps and the watermark at each record,
with periodic emission off so only the end of input moves event time."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessFunction


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Seen(ProcessFunction):
    def __init__(self, label):
        self.label = label

    def process_element(self, value, ctx):
        yield "%s %s ts=%s wm=%s" % (
            self.label,
            value[0],
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )


class EndTimer(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1])

    def on_timer(self, timestamp, ctx):
        yield "timer %s %d wm=%d" % (
            ctx.get_current_key(),
            timestamp,
            ctx.timer_service().current_watermark(),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
data = env.from_collection(
    [("a", 5), ("b", 3), ("c", 9)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
)
for label, strategy in [
    ("monotonous", WatermarkStrategy.for_monotonous_timestamps()),
    ("bounded", WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(3))),
    ("none", WatermarkStrategy.no_watermarks()),
]:
    stamped = data.assign_timestamps_and_watermarks(strategy.with_timestamp_assigner(Second()))
    stamped.process(Seen(label), output_type=Types.STRING()).print()
    stamped.key_by(lambda x: x[0]).process(EndTimer(), output_type=Types.STRING()).print(label)
data.process(Seen("untimed"), output_type=Types.STRING()).print()
env.execute("watermark strategies")
