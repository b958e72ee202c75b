"""Window results carry the timestamp of what fired them: the element under a CountTrigger, Long.MIN_VALUE for count windows on an untimed stream."""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessFunction
from pyflink.datastream.window import CountTrigger, TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Stamp(ProcessFunction):
    def process_element(self, value, ctx):
        yield "%s @ %s" % (value, ctx.timestamp())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
row = Types.TUPLE([Types.STRING(), Types.LONG()])
source = env.from_collection([("a", 100), ("a", 350)], type_info=row)
(
    source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .window(TumblingEventTimeWindows.of(Time.seconds(1)))
    .trigger(CountTrigger.of(1))
    .reduce(lambda a, b: (a[0], a[1] + b[1]), output_type=row)
    .process(Stamp(), output_type=Types.STRING())
    .print("count-trigger")
)
(
    source.key_by(lambda t: t[0], key_type=Types.STRING())
    .count_window(2)
    .reduce(lambda a, b: (a[0], a[1] + b[1]), output_type=row)
    .process(Stamp(), output_type=Types.STRING())
    .print("count-window")
)
env.execute("window result timestamps")
