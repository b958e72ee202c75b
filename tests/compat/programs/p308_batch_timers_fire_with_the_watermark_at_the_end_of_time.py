"""BATCH execution mode and timers: a key's event-time timers fire after its last record,
in timestamp order whatever order they were registered in, with the key's state; a timer
registered from on_timer fires too; a deleted timer does not; processing-time timers fire
at the end of their key as well, after its event-time ones (in Flink; PyFlink's asynchronous
Python worker may print them in another order). While a key's timers fire, the watermark
reads as the end of time; during its records, as the start of it."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Second(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Timers(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.total = runtime_context.get_state(ValueStateDescriptor("total", Types.LONG()))

    def process_element(self, value, ctx):
        self.total.update((self.total.value() or 0) + value[1])
        service = ctx.timer_service()
        kind = value[2]
        if kind == "event":
            service.register_event_time_timer(ctx.timestamp() * 10)
        elif kind == "event-deleted":
            service.register_event_time_timer(ctx.timestamp() * 10 + 1)
            service.delete_event_time_timer(ctx.timestamp() * 10 + 1)
        elif kind == "chain":
            service.register_event_time_timer(ctx.timestamp() * 10 + 2)
        elif kind == "processing":
            service.register_processing_time_timer(123)
        yield "record key=%s ts=%d total=%d watermark=%d" % (
            ctx.get_current_key(),
            ctx.timestamp(),
            self.total.value(),
            service.current_watermark(),
        )

    def on_timer(self, timestamp, ctx):
        if timestamp % 10 == 2 and timestamp < 1000:
            ctx.timer_service().register_event_time_timer(timestamp * 100)
        yield "timer key=%s at=%d domain=%s total=%s watermark=%d" % (
            ctx.get_current_key(),
            timestamp,
            ctx.time_domain(),
            self.total.value(),
            ctx.timer_service().current_watermark(),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
row = Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()])
stream = env.from_collection(
    [
        ("k1", 9, "event"),
        ("k2", 4, "chain"),
        ("k1", 3, "event"),
        ("k3", 5, "processing"),
        ("k1", 6, "event-deleted"),
        ("k2", 2, "event"),
        ("k1", 1, "chain"),
        ("k3", 7, "event"),
        ("k2", 8, "none"),
    ],
    type_info=row,
).assign_timestamps_and_watermarks(
    WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(Second())
)
stream.key_by(lambda v: v[0], key_type=Types.STRING()).process(
    Timers(), output_type=Types.STRING()
).print()
env.execute("batch timers")
