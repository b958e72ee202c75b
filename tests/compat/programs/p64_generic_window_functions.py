"""Window functions written as PyFlink's generic classes: WindowFunction[...],
ProcessWindowFunction[...] with ProcessWindowFunction.Context[TimeWindow], ProcessAllWindowFunction
[...] and a SessionWindowTimeGapExtractor, over tumbling, session and count windows."""

from typing import Iterable

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import (
    ProcessAllWindowFunction,
    ProcessWindowFunction,
    WindowFunction,
)
from pyflink.datastream.window import (
    CountWindow,
    EventTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    TimeWindow,
    TumblingEventTimeWindows,
)


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return value[1]


class Gap(SessionWindowTimeGapExtractor):
    def extract(self, element: tuple) -> int:
        return 3 if element[0] == "a" else 6


class Sum(WindowFunction[tuple, tuple, str, CountWindow]):
    def apply(self, key: str, window: CountWindow, inputs: Iterable[tuple]):
        return [(key, sum(i[1] for i in inputs))]


class Bounds(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(
        self,
        key: str,
        context: ProcessWindowFunction.Context[TimeWindow],
        elements: Iterable[tuple],
    ) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len(list(elements)))]


class AllBounds(ProcessAllWindowFunction[tuple, tuple, TimeWindow]):
    def process(
        self, context: "ProcessAllWindowFunction.Context", elements: Iterable[tuple]
    ) -> Iterable[tuple]:
        return [(context.window().start, context.window().end, len(list(elements)))]


pair = Types.TUPLE([Types.STRING(), Types.INT()])
bounds = Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG(), Types.INT()])
env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 1), ("b", 2), ("a", 3), ("b", 4), ("a", 5), ("a", 9), ("b", 14), ("a", 15)]
stamped = env.from_collection(data, type_info=pair).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
)
keyed = stamped.key_by(lambda x: x[0], key_type=Types.STRING())
keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(5))).process(Bounds(), bounds).print(
    "tumbling"
)
keyed.window(EventTimeSessionWindows.with_dynamic_gap(Gap())).process(Bounds(), bounds).print(
    "session"
)
keyed.count_window(2).apply(Sum(), pair).print("count")
stamped.window_all(TumblingEventTimeWindows.of(Time.milliseconds(5))).process(
    AllBounds(), Types.TUPLE([Types.LONG(), Types.LONG(), Types.INT()])
).print("all")
env.execute("generic window functions")
