"""Keyed event-time windows at parallelism 3: tumbling windows with aggregate plus a
ProcessWindowFunction, and session windows with reduce, where timestamps are assigned by three
parallel subtasks and each window operator's watermark is the minimum over its inputs. The
watermark bound covers the input's disorder, so no element is late however the subtasks
interleave; keys land on PyFlink's subtasks, so the N> prefixes are compared."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, ProcessWindowFunction
from pyflink.datastream.window import EventTimeSessionWindows, TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Total(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value[2]

    def get_result(self, accumulator):
        return accumulator

    def merge(self, acc_a, acc_b):
        return acc_a + acc_b


class Label(ProcessWindowFunction):
    def process(self, key, context, elements):
        for total in elements:
            yield "key=%s [%d,%d) total=%d" % (
                key,
                context.window().start,
                context.window().end,
                total,
            )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
keys = ["red", "green", "blue", "cyan", "teal", "gold", "plum"]
data = [(keys[i % 7], 10000 + (i * 37) % 900 + (i // 7) * 400, i) for i in range(60)]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(30)
).with_timestamp_assigner(EventTime())
keyed = (
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
)

(
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(1)))
    .aggregate(
        Total(), window_function=Label(), accumulator_type=Types.LONG(), output_type=Types.STRING()
    )
    .print("tumbling")
)
(
    keyed.window(EventTimeSessionWindows.with_gap(Time.milliseconds(300)))
    .reduce(
        lambda a, b: (a[0], max(a[1], b[1]), a[2] + b[2]),
        output_type=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
    )
    .print("session")
)
env.execute("parallel windows")
