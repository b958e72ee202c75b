"""How results leave user functions on the event-time path: yield vs return of a list, a tuple
(its fields are separate results) or a string (its characters) from process_element, on_timer,
ProcessWindowFunction.process, WindowFunction.apply and ProcessAllWindowFunction.process;
returning None from process_element; yielding nothing."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    KeyedProcessFunction,
    ProcessAllWindowFunction,
    ProcessFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from pyflink.datastream.window import TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Keyed(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1)
        if value[2] == 1:
            return None
        if value[2] == 2:
            return ("tuple-field-1", "tuple-field-2")
        if value[2] == 3:
            return "str"
        return ["list %d" % value[2]]

    def on_timer(self, timestamp, ctx):
        if timestamp % 2:
            return ("timer-tuple-%d" % timestamp, "second")
        if timestamp % 3 == 0:
            return "ab"
        return iter([])


class Plain(ProcessFunction):
    def process_element(self, value, ctx):
        if value[2] % 2:
            return
        yield "plain %d" % value[2]


class WinProcess(ProcessWindowFunction):
    def process(self, key, context, elements):
        if key == "a":
            return ("pw-%s" % key, context.window().start)
        return "xy"


class WinApply(WindowFunction):
    def apply(self, key, window, inputs):
        if key == "a":
            return []
        return ("apply-%s" % key, len(list(inputs)))


class AllProcess(ProcessAllWindowFunction):
    def process(self, context, elements):
        if context.window().start == 0:
            return ["all-%d" % context.window().start]
        return ()


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 100, 1), ("b", 250, 2), ("a", 600, 3), ("b", 1300, 4), ("a", 1400, 5)]
timed = env.from_collection(
    data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(10)).with_timestamp_assigner(
        EventTime()
    )
)
keyed = timed.key_by(lambda t: t[0], key_type=Types.STRING())
w = TumblingEventTimeWindows.of(Time.seconds(1))
keyed.process(Keyed()).print("keyed")
timed.process(Plain()).print("plain")
keyed.window(w).process(WinProcess()).print("pw")
keyed.window(w).apply(WinApply()).print("apply")
timed.window_all(w).process(AllProcess()).print("all")
env.execute("return styles")
