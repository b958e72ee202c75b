"""Iterating over keyed state in on_timer: a MapState's items, keys and values and a ListState,
read, changed and cleared while the timer of each key fires, in event time."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Buffer(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.counts = runtime_context.get_map_state(
            MapStateDescriptor("counts", Types.STRING(), Types.INT())
        )
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.LONG()))

    def process_element(self, value, ctx):
        word = value[2]
        self.counts.put(word, (self.counts.get(word) or 0) + 1)
        self.seen.add(value[1])
        ctx.timer_service().register_event_time_timer(value[1] - value[1] % 10 + 10)

    def on_timer(self, timestamp, ctx):
        items = sorted(self.counts.items())
        keys = sorted(self.counts.keys())
        values = sorted(self.counts.values())
        seen = list(self.seen.get())
        yield "%s@%d items=%s keys=%s values=%s seen=%s empty=%s" % (
            ctx.get_current_key(),
            timestamp,
            items,
            keys,
            values,
            seen,
            self.counts.is_empty(),
        )
        for word in list(self.counts.keys()):
            if self.counts.get(word) > 1:
                self.counts.remove(word)
        self.seen.update([max(seen)])
        yield "%s@%d left=%s contains_x=%s seen=%s" % (
            ctx.get_current_key(),
            timestamp,
            sorted(self.counts.items()),
            self.counts.contains("x"),
            list(self.seen.get()),
        )
        if timestamp >= 30:
            self.counts.clear()
            self.seen.clear()
            yield "%s@%d cleared empty=%s seen=%s" % (
                ctx.get_current_key(),
                timestamp,
                self.counts.is_empty(),
                list(self.seen.get()),
            )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [
    ("k", 1, "x"),
    ("k", 2, "y"),
    ("j", 3, "x"),
    ("k", 5, "x"),
    ("k", 12, "z"),
    ("j", 14, "x"),
    ("j", 15, "x"),
    ("k", 27, "y"),
    ("j", 31, "w"),
]
env.from_collection(
    data, type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(0)).with_timestamp_assigner(
        Second()
    )
).key_by(lambda e: e[0], key_type=Types.STRING()).process(
    Buffer(), output_type=Types.STRING()
).print()
env.get_config().set_auto_watermark_interval(0)
env.execute("state in on_timer")
