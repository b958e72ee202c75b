"""Session windows whose gap depends on the element, in event time, and the merged windows'
bounds."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import (
    EventTimeSessionWindows,
    SessionWindowTimeGapExtractor,
)


class Ts(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Gap(SessionWindowTimeGapExtractor):
    def extract(self, element):
        return element[2]


class Bounds(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield "%s [%d,%d) %s" % (key, w.start, w.end, [e[1] for e in elements])


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = env.from_collection(
    [("a", 1, 3), ("a", 5, 10), ("a", 14, 2), ("b", 2, 1), ("b", 3, 1), ("a", 30, 1)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.LONG()]),
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Ts())
)
data.key_by(lambda x: x[0]).window(EventTimeSessionWindows.with_dynamic_gap(Gap())).process(
    Bounds(), output_type=Types.STRING()
).print()
env.execute("dynamic session gaps")
