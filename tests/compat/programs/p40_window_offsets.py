"""Tumbling and sliding event-time windows with offsets (positive, and negative for sliding),
window bounds printed from a ProcessWindowFunction; records with equal timestamps and one at a
window's last millisecond."""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Bounds(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        w = context.window()
        yield "%s key=%s [%d,%d) max_ts=%d values=%s" % (
            self.label,
            key,
            w.start,
            w.end,
            w.max_timestamp(),
            sorted(e[2] for e in elements),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("a", 0, 1),
    ("a", 249, 2),
    ("a", 250, 3),
    ("a", 250, 4),
    ("b", 1249, 5),
    ("a", 1000, 6),
    ("b", 1250, 7),
    ("a", 1999, 8),
    ("b", 3, 9),
    ("a", 2600, 10),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(60)
).with_timestamp_assigner(EventTime())
keyed = (
    env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]))
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
)

(
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(1), Time.milliseconds(250)))
    .process(Bounds("tumble+250"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(TumblingEventTimeWindows.of(Time.milliseconds(1000), Time.milliseconds(0)))
    .process(Bounds("tumble+0"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(
        SlidingEventTimeWindows.of(Time.seconds(1), Time.milliseconds(500), Time.milliseconds(100))
    )
    .process(Bounds("slide+100"), output_type=Types.STRING())
    .print()
)
(
    keyed.window(
        SlidingEventTimeWindows.of(Time.seconds(1), Time.milliseconds(400), Time.milliseconds(-150))
    )
    .process(Bounds("slide-150"), output_type=Types.STRING())
    .print()
)
env.execute("offsets")
