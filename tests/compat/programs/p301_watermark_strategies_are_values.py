"""WatermarkStrategy's with_* methods as PyFlink has them: with_timestamp_assigner sets the
assigner on the strategy it is called on and returns it; with_idleness and
with_watermark_alignment return a new strategy, which leaves the one they were called on as it
was and carries no timestamp assigner of its own (records keep the timestamps they had)."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import ProcessFunction, StreamExecutionEnvironment


class FromField(TimestampAssigner):
    def __init__(self, offset):
        self.offset = offset

    def extract_timestamp(self, value, record_timestamp):
        return value[1] + self.offset


class Show(ProcessFunction):
    def __init__(self, label):
        self.label = label

    def process_element(self, value, ctx):
        yield "%s %s ts=%s" % (self.label, value[0], ctx.timestamp())


base = WatermarkStrategy.for_monotonous_timestamps()
print(
    "with_timestamp_assigner returns its strategy:",
    base.with_timestamp_assigner(FromField(0)) is base,
)
idle = base.with_idleness(Duration.of_seconds(30))
aligned = base.with_watermark_alignment("group", Duration.of_seconds(1))
aligned_every = base.with_watermark_alignment(
    "group", Duration.of_seconds(1), Duration.of_millis(10)
)
print("with_idleness returns a new strategy:", idle is not base)
print(
    "with_watermark_alignment returns new strategies:",
    aligned is not base,
    aligned_every is not aligned,
)
print(
    "two idleness strategies of one base are two:",
    base.with_idleness(Duration.of_seconds(1)) is not idle,
)

# A second assigner replaces the first on the base, and not on what was derived from it.
base.with_timestamp_assigner(FromField(1000))

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = env.from_collection(
    [("a", 1), ("b", 2)], type_info=Types.TUPLE([Types.STRING(), Types.LONG()])
)
stamped = data.assign_timestamps_and_watermarks(base)
stamped.process(Show("base"), Types.STRING()).print()
stamped.assign_timestamps_and_watermarks(idle).process(
    Show("idle after base"), Types.STRING()
).print()
derived = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_millis(5)
).with_timestamp_assigner(FromField(100))
derived_idle = derived.with_idleness(Duration.of_seconds(30))
data.assign_timestamps_and_watermarks(derived).process(Show("derived"), Types.STRING()).print()
stamped.assign_timestamps_and_watermarks(derived_idle).process(
    Show("derived idle after base"), Types.STRING()
).print()
derived_idle.with_timestamp_assigner(FromField(7))
data.assign_timestamps_and_watermarks(derived_idle).process(
    Show("derived idle with its own assigner"), Types.STRING()
).print()
env.execute("watermark strategies are values")
