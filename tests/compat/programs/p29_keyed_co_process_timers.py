"""KeyedCoProcessFunction on two connected keyed streams at parallelism 2: state shared between
both inputs per key, event-time timers registered from either input (the operator's watermark is
the minimum of its inputs') and fired on the final watermark, reporting what each key saw; keys
land on PyFlink's subtasks, so the N> prefixes are compared."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedCoProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Match(KeyedCoProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.STRING()))

    def process_element1(self, value, ctx):
        self.seen.add("order:%s@%d" % (value[2], ctx.timestamp()))
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 500)

    def process_element2(self, value, ctx):
        self.seen.add("payment:%s@%d" % (value[2], ctx.timestamp()))
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 500)
        yield "payment key=%s ts=%d" % (ctx.get_current_key(), ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        yield "timer key=%s at=%d domain=%s seen=%s" % (
            ctx.get_current_key(),
            timestamp,
            ctx.time_domain(),
            sorted(self.seen.get()),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
row_type = Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_seconds(60)
).with_timestamp_assigner(EventTime())
orders = env.from_collection(
    [
        ("k1", 1000, "o1"),
        ("k2", 1100, "o2"),
        ("k3", 900, "o3"),
        ("k1", 1300, "o4"),
        ("k4", 2000, "o5"),
        ("k5", 1500, "o6"),
    ],
    type_info=row_type,
).assign_timestamps_and_watermarks(strategy)
payments = env.from_collection(
    [
        ("k2", 1200, "p1"),
        ("k1", 1250, "p2"),
        ("k5", 1400, "p3"),
        ("k3", 3000, "p4"),
        ("k6", 1000, "p5"),
    ],
    type_info=row_type,
).assign_timestamps_and_watermarks(strategy)
(
    orders.key_by(lambda t: t[0], key_type=Types.STRING())
    .connect(payments.key_by(lambda t: t[0], key_type=Types.STRING()))
    .process(Match(), output_type=Types.STRING())
    .print()
)
env.execute("keyed co-process timers")
