"""Periodic watermarks while a slow map holds its task: with chaining disabled and a bundle
size of 1, the records the map emitted before it paused reach the watermark assigner
during the pause, so a watermark goes out then; records after the pause are late. Some of
them re-fire a window within the allowed lateness, others are later than that and go to the
late-data side output. The markers themselves and the records after the second pause do
not move the watermark, so the output does not depend on how records right after a pause
are grouped into network buffers."""

import time

from pyflink.common import Configuration, Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, ProcessWindowFunction
from pyflink.datastream.window import SlidingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class PauseAtMarkers(MapFunction):
    def map(self, value):
        if value[2].startswith("pause"):
            time.sleep(1)
        return value


class Fired(ProcessWindowFunction):
    def process(self, key, context, elements):
        w = context.window()
        yield "key=%s [%d,%d) watermark=%d %s" % (
            key,
            w.start,
            w.end,
            context.current_watermark(),
            sorted(e[2] for e in elements),
        )


def record_type():
    return Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])


config = Configuration()
config.set_string("python.fn-execution.bundle.size", "1")
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(1)
env.disable_operator_chaining()
data = [
    ("a", 1000, "v1"),
    ("a", 3000, "v2"),
    ("a", 2000, "pause1"),
    ("a", 1200, "v3"),
    ("a", 8000, "v4"),
    ("a", 6000, "pause2"),
    ("a", 2500, "v5"),
    ("a", -3000, "v6"),
    ("a", 7000, "v7"),
    ("a", 7500, "v8"),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_millis(0)
).with_timestamp_assigner(EventTime())
late = OutputTag("late", record_type())
fired = (
    env.from_collection(data, type_info=record_type())
    .map(PauseAtMarkers(), output_type=record_type())
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .window(SlidingEventTimeWindows.of(Time.seconds(4), Time.seconds(2)))
    .allowed_lateness(2000)
    .side_output_late_data(late)
    .process(Fired(), output_type=Types.STRING())
)
fired.print()
fired.get_side_output(late).print("late")
env.execute("watermark during a slow map")
