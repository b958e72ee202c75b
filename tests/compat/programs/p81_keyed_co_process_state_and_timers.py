"""A KeyedCoProcessFunction joining two keyed streams: state shared by both inputs of a key,
timers registered from either side, and on_timer reading and clearing that state. (The two
inputs interleave at random, so only what timers see at the end is printed.)"""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedCoProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, ValueStateDescriptor


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Join(KeyedCoProcessFunction):
    def open(self, ctx: RuntimeContext):
        self.orders = ctx.get_list_state(ListStateDescriptor("orders", Types.STRING()))
        self.price = ctx.get_state(ValueStateDescriptor("price", Types.DOUBLE()))

    def process_element1(self, value, ctx):
        self.orders.add(value[2])
        ctx.timer_service().register_event_time_timer(value[1] + 100)

    def process_element2(self, value, ctx):
        if (self.price.value() or 0) < value[2]:
            self.price.update(value[2])
        ctx.timer_service().register_event_time_timer(value[1] + 200)

    def on_timer(self, timestamp, ctx):
        # Periodic watermarks are off: timers fire at the end, after both inputs.
        yield "%s timer %d orders=%s price=%s" % (
            ctx.get_current_key(),
            timestamp,
            sorted(self.orders.get()),
            self.price.value(),
        )
        if timestamp % 200 == 0 or ctx.get_current_key() == "fig":
            self.orders.clear()


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.get_config().set_auto_watermark_interval(0)
strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
orders = env.from_collection(
    [("apple", 10, "o1"), ("pear", 20, "o2"), ("apple", 30, "o3"), ("fig", 40, "o4")],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()]),
).assign_timestamps_and_watermarks(strategy)
prices = env.from_collection(
    [("apple", 15, 1.5), ("pear", 5, 2.25), ("apple", 35, 1.75)],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.DOUBLE()]),
).assign_timestamps_and_watermarks(strategy)
orders.connect(prices).key_by(lambda o: o[0], lambda p: p[0], key_type=Types.STRING()).process(
    Join(), output_type=Types.STRING()
).print()
env.execute("keyed co process")
