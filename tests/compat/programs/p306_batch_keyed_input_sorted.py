"""In BATCH execution mode a keyed operator sees its input sorted by key, and within a key by
timestamp, as PyFlink does: a counter of the function instance shows the order in which
records and timers arrive. Keys of a declared STRING type, and undeclared (pickled) int and
string keys; event-time timers of a key fire after its records, with its state."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Trace(KeyedProcessFunction):
    def __init__(self, label):
        self.label = label

    def open(self, runtime_context: RuntimeContext):
        self.n = 0
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.LONG()))

    def process_element(self, value, ctx):
        self.n += 1
        self.seen.add(ctx.timestamp())
        if value[2]:
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        yield "%s #%d key=%r ts=%d seen=%s" % (
            self.label,
            self.n,
            ctx.get_current_key(),
            ctx.timestamp(),
            list(self.seen.get()),
        )

    def on_timer(self, timestamp, ctx):
        # Not counted: PyFlink's asynchronous Python worker fires a key's timers one record
        # into the next key, Weir (as Flink) between the two keys.
        yield "%s timer key=%r at=%d seen=%s" % (
            self.label,
            ctx.get_current_key(),
            timestamp,
            list(self.seen.get()),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.BOOLEAN()])
strings = env.from_collection(
    [
        ("b", 5, False),
        ("aa", 3, True),
        ("a", 9, False),
        ("b", 1, True),
        ("B", 7, False),
        ("ab", 2, False),
        ("a", 4, True),
        ("é", 6, False),
        ("b", 3, False),
        ("", 8, False),
        ("zz", 1, False),
    ],
    type_info=row,
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
)
strings.key_by(lambda v: v[0], key_type=Types.STRING()).process(
    Trace("typed"), output_type=Types.STRING()
).print()
strings.key_by(lambda v: v[0]).process(Trace("pickled"), output_type=Types.STRING()).print()
ints = env.from_collection(
    [
        ("300", 4, True),
        ("1", 6, False),
        ("-5", 2, False),
        ("70000", 1, False),
        ("2", 3, True),
        ("1", 2, False),
        ("256", 9, False),
        ("300", 1, False),
    ],
    type_info=row,
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
)
ints.key_by(lambda v: int(v[0])).process(Trace("ints"), output_type=Types.STRING()).print()
ints.key_by(lambda v: int(v[0]), key_type=Types.INT()).process(
    Trace("typed ints"), output_type=Types.STRING()
).print()
env.execute("batch keyed order")
