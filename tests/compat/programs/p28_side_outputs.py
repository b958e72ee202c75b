"""Side outputs written by user functions: a ProcessFunction yielding (OutputTag, value) pairs
(typed and untyped tags, alongside main output), and a KeyedProcessFunction emitting to a side
output from on_timer when its event-time timer fires at end of input."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessFunction

odd = OutputTag("odd", Types.INT())
words = OutputTag("words")
expired = OutputTag("expired", Types.STRING())


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        if value[1] % 2:
            yield odd, value[1]
        else:
            yield value[0] + "-even"
        if len(value[0]) > 1:
            yield words, (value[0], ctx.timestamp())


class Expire(KeyedProcessFunction):
    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        yield "seen %s@%d" % (value[0], ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield expired, "%s expired at %d" % (ctx.get_current_key(), timestamp)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 10), ("bb", 21), ("c", 14), ("dd", 7), ("a", 33)]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(10)
).with_timestamp_assigner(EventTime())
stream = env.from_collection(
    data, type_info=Types.TUPLE([Types.STRING(), Types.INT()])
).assign_timestamps_and_watermarks(strategy)

split = stream.process(Split(), output_type=Types.STRING())
split.print("main")
split.get_side_output(odd).print("odd")
split.get_side_output(words).print("words")

expiring = stream.key_by(lambda t: t[0], key_type=Types.STRING()).process(
    Expire(), output_type=Types.STRING()
)
expiring.print("seen")
expiring.get_side_output(expired).print("expired")
env.execute("side outputs")
