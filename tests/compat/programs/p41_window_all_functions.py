"""window_all (non-keyed windows) on event time: reduce with an AllWindowFunction and with a
ProcessAllWindowFunction, aggregate with a ProcessAllWindowFunction, apply, and a
ProcessAllWindowFunction under a ContinuousEventTimeTrigger counting firings in
context.window_state() and windows in context.global_state(), cleaning up in clear()."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    AggregateFunction,
    AllWindowFunction,
    ProcessAllWindowFunction,
)
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.datastream.window import ContinuousEventTimeTrigger, TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


class Label(AllWindowFunction):
    def apply(self, window, inputs):
        for v in inputs:
            yield "reduce+apply [%d,%d) %s" % (window.start, window.end, v)


class LabelProcess(ProcessAllWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, context, elements):
        w = context.window()
        return ["%s [%d,%d) %s" % (self.label, w.start, w.end, e) for e in elements]


class SumLen(AggregateFunction):
    def create_accumulator(self):
        return [0, 0]

    def add(self, value, accumulator):
        return [accumulator[0] + 1, accumulator[1] + len(value[1])]

    def get_result(self, accumulator):
        return "n=%d chars=%d" % tuple(accumulator)

    def merge(self, a, b):
        return [a[0] + b[0], a[1] + b[1]]


class Everything(AllWindowFunction):
    def apply(self, window, inputs):
        return ["apply [%d,%d) %s" % (window.start, window.end, sorted(e[1] for e in inputs))]


class Firings(ProcessAllWindowFunction):
    def process(self, context, elements):
        fired = context.window_state().get_state(ValueStateDescriptor("fired", Types.INT()))
        seen = context.global_state().get_state(ValueStateDescriptor("seen", Types.INT()))
        n = (fired.value() or 0) + 1
        fired.update(n)
        total = (seen.value() or 0) + 1
        seen.update(total)
        w = context.window()
        yield "state [%d,%d) firing=%d global=%d words=%s" % (
            w.start,
            w.end,
            n,
            total,
            sorted(e[1] for e in elements),
        )

    def clear(self, context):
        context.window_state().get_state(ValueStateDescriptor("fired", Types.INT())).clear()


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    (10, "ant"),
    (250, "bee"),
    (120, "cat"),
    (610, "dove"),
    (480, "eel"),
    (900, "fox"),
    (1300, "gnu"),
    (1010, "hen"),
    (730, "ibis"),
    (2999, "jay"),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(50)
).with_timestamp_assigner(EventTime())
words = env.from_collection(
    data, type_info=Types.TUPLE([Types.LONG(), Types.STRING()])
).assign_timestamps_and_watermarks(strategy)
tumbling = TumblingEventTimeWindows.of(Time.seconds(1))
pair = Types.TUPLE([Types.LONG(), Types.STRING()])


def longest(a, b):
    return a if (len(a[1]), a[1]) >= (len(b[1]), b[1]) else b


words.window_all(tumbling).reduce(
    longest, window_function=Label(), output_type=Types.STRING()
).print()
words.window_all(tumbling).reduce(
    longest, window_function=LabelProcess("reduce+process"), output_type=Types.STRING()
).print()
words.window_all(tumbling).aggregate(
    SumLen(),
    window_function=LabelProcess("aggregate+process"),
    accumulator_type=Types.PICKLED_BYTE_ARRAY(),
    output_type=Types.STRING(),
).print()
words.window_all(tumbling).apply(Everything(), output_type=Types.STRING()).print()
(
    words.window_all(tumbling)
    .trigger(ContinuousEventTimeTrigger.of(Time.milliseconds(400)))
    .process(Firings(), output_type=Types.STRING())
    .print()
)
env.execute("window all functions")
