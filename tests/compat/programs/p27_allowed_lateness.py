"""allowed_lateness and side_output_late_data with periodic watermarks switched off
(auto-watermark interval 0): the only watermark is the final one, so however far out of order
the input is (here far beyond the zero out-of-orderness bound) nothing is late. Each window
fires exactly once at end of input, with or without allowed lateness, and the late-data side
outputs stay empty.

(Late firings cannot be shown reproducibly on PyFlink: its watermarks are periodic in
processing time, so whether an element arrives before or after a watermark depends on timing.)"""

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Firing(ProcessWindowFunction):
    def __init__(self, label):
        self.label = label

    def process(self, key, context, elements):
        w = context.window()
        yield "%s key=%s [%d,%d) watermark=%d values=%s" % (
            self.label,
            key,
            w.start,
            w.end,
            context.current_watermark(),
            sorted(e[2] for e in elements),
        )


def row_type_info():
    return Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_auto_watermark_interval(0)
row_type = row_type_info()
data = [
    ("a", 100, "v1"),
    ("a", 2900, "v2"),
    ("b", 300, "v3"),
    ("a", 750, "v4"),
    ("b", 5600, "v5"),
    ("a", 1100, "v6"),
    ("b", 150, "v7"),
    ("a", 20, "v8"),
    ("b", 1999, "v9"),
    ("a", 1000, "v10"),
]
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_millis(0)
).with_timestamp_assigner(EventTime())
keyed = (
    env.from_collection(data, type_info=row_type)
    .assign_timestamps_and_watermarks(strategy)
    .key_by(lambda t: t[0], key_type=Types.STRING())
)
window = TumblingEventTimeWindows.of(Time.seconds(1))

# A tag must get its own type information object: PyFlink fails to pickle a tag whose
# (nested) type information has already been turned into a Java object by another stream.
too_late = OutputTag("too-late", row_type_info())
lenient = (
    keyed.window(window)
    .allowed_lateness(1000)
    .side_output_late_data(too_late)
    .process(Firing("lateness=1000"), output_type=Types.STRING())
)
lenient.print()
lenient.get_side_output(too_late).print("too-late")

late = OutputTag("late", row_type_info())
strict = (
    keyed.window(window)
    .side_output_late_data(late)
    .reduce(
        lambda a, b: (a[0], max(a[1], b[1]), ",".join(sorted((a[2] + "," + b[2]).split(",")))),
        output_type=row_type,
    )
)
strict.print("lateness=0")
strict.get_side_output(late).print("late")
env.execute("allowed lateness")
