"""Side outputs of several types from one process function, from a keyed process function's
on_timer, and from a process window function, each printed as typed."""

from pyflink.common import Row, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import (
    KeyedProcessFunction,
    ProcessFunction,
    ProcessWindowFunction,
)
from pyflink.datastream.window import TumblingEventTimeWindows


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


numbers = OutputTag("numbers", Types.LONG())
rows = OutputTag("rows", Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.LONG()]))
untyped = OutputTag("untyped")
timers = OutputTag("timers", Types.STRING())
windows = OutputTag("windows", Types.TUPLE([Types.STRING(), Types.LONG()]))


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        yield value[0]
        yield numbers, value[1]
        yield rows, Row(word=value[0], n=value[1])
        yield untyped, (value[0], [value[1]])


class Late(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 1)
        yield value[0]

    def on_timer(self, timestamp, ctx):
        yield timers, "%s fired %d" % (ctx.get_current_key(), timestamp)


class Window(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield windows, (key, context.window().end)
        yield "%s:%d" % (key, len(list(elements)))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
data = env.from_collection(
    [("a", 1), ("b", 2), ("a", 7)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
)
split = data.process(Split(), output_type=Types.STRING())
split.print("main")
split.get_side_output(numbers).print("numbers")
split.get_side_output(rows).print("rows")
split.get_side_output(untyped).print("untyped")
late = data.key_by(lambda x: x[0]).process(Late(), output_type=Types.STRING())
late.get_side_output(timers).print("timers")
windowed = data.key_by(lambda x: x[0]).window(TumblingEventTimeWindows.of(Time.milliseconds(5)))
counted = windowed.process(Window(), output_type=Types.STRING())
counted.print("window")
counted.get_side_output(windows).print("window side")
env.execute("side outputs")
