"""KeyedBroadcastProcessFunction at parallelism 2: alert thresholds per sensor are broadcast;
readings are keyed by sensor, counted in keyed state, and each sets an event-time timer.
The readings carry timestamps but no watermarks, so the timers fire on the final watermark,
once both inputs ended: on_timer reads the complete broadcast state (read-only) beside the
key's keyed state. Keys land on PyFlink's subtasks, so the N> prefixes are compared."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

THRESHOLDS = MapStateDescriptor("thresholds", Types.STRING(), Types.INT())


class ReadingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Alerts(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))
        self.highest = runtime_context.get_state(ValueStateDescriptor("highest", Types.INT()))

    def process_element(self, value, ctx):
        self.count.update((self.count.value() or 0) + 1)
        self.highest.update(max(self.highest.value() or 0, value[2]))
        ctx.timer_service().register_event_time_timer(ctx.timestamp() + 1000)
        yield "reading %s=%d at %d (key %s, watermark %d)" % (
            value[0],
            value[2],
            ctx.timestamp(),
            ctx.get_current_key(),
            ctx.timer_service().current_watermark(),
        )

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(THRESHOLDS).put(value[0], value[1])
        yield "threshold of %s set to %d (ts %d)" % (value[0], value[1], ctx.timestamp())

    def on_timer(self, timestamp, ctx):
        threshold = ctx.get_broadcast_state(THRESHOLDS).get(ctx.get_current_key())
        highest = self.highest.value()
        yield "timer %s at %d (ts %d, %s): %d readings, highest %d, threshold %s, %s" % (
            ctx.get_current_key(),
            timestamp,
            ctx.timestamp(),
            ctx.time_domain(),
            self.count.value(),
            highest,
            threshold,
            "no threshold" if threshold is None else ("ALERT" if highest > threshold else "ok"),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
thresholds = env.from_collection(
    [("s1", 50), ("s2", 80), ("s3", 10), ("s4", 99)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT()]),
)
readings = env.from_collection(
    [
        ("s1", 1000, 40),
        ("s2", 1100, 90),
        ("s3", 1200, 5),
        ("s1", 1500, 60),
        ("s5", 1600, 70),
        ("s2", 3000, 20),
        ("s4", 3500, 98),
    ],
    type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
).assign_timestamps_and_watermarks(
    WatermarkStrategy.no_watermarks().with_timestamp_assigner(ReadingTime())
)
(
    readings.key_by(lambda r: r[0], key_type=Types.STRING())
    .connect(thresholds.broadcast(THRESHOLDS))
    .process(Alerts(), output_type=Types.STRING())
    .print()
)
env.execute("keyed broadcast with timers")
