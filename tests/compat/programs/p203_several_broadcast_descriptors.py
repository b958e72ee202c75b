"""One broadcast stream with two broadcast states (broadcast(descriptor1, descriptor2)): its
elements set limits in one and display names in the other, and remove or replace entries
(remove, put_all, item assignment). A KeyedBroadcastProcessFunction keeps the keyed stream's
values in list state and reports per key on the final watermark, reading both states
through every read method of the read-only view."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor

LIMITS = MapStateDescriptor("limits", Types.STRING(), Types.INT())
NAMES = MapStateDescriptor("names", Types.STRING(), Types.STRING())


class At(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Report(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.values = runtime_context.get_list_state(ListStateDescriptor("values", Types.INT()))

    def process_element(self, value, ctx):
        self.values.add(value[1])
        ctx.timer_service().register_event_time_timer(10_000)

    def process_broadcast_element(self, value, ctx):
        kind, key, setting = value
        limits = ctx.get_broadcast_state(LIMITS)
        names = ctx.get_broadcast_state(NAMES)
        if kind == "limit":
            limits.put(key, int(setting))
        elif kind == "name":
            names[key] = setting
        elif kind == "forget":
            limits.remove(key)
            del names[key]
        elif kind == "names":
            names.put_all([tuple(pair.split("=")) for pair in setting.split(",")])
        yield "%s %s: limits %s, names %s" % (
            kind,
            key,
            sorted(limits.items()),
            sorted(names.items()),
        )

    def on_timer(self, timestamp, ctx):
        key = ctx.get_current_key()
        limits = ctx.get_broadcast_state(LIMITS)
        names = ctx.get_broadcast_state(NAMES)
        total = sum(self.values.get())
        limit = limits.get(key)
        yield "%s (%s): total %d, limit %s, %s | limit keys %s, name values %s, %s, %s" % (
            names[key] if key in names else "unnamed",
            key,
            total,
            limit,
            "over" if limit is not None and total > limit else "within",
            sorted(limits.keys()),
            sorted(names.values()),
            "no limits" if limits.is_empty() else "%d limits" % len(list(limits)),
            limits.contains(key),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
settings = env.from_collection(
    [
        ("limit", "a", "10"),
        ("limit", "b", "5"),
        ("name", "a", "Alpha"),
        ("limit", "c", "7"),
        ("names", "-", "b=Beta,c=Gamma,d=Delta"),
        ("forget", "c", ""),
        ("limit", "a", "12"),
    ],
    type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.STRING()]),
)
values = env.from_collection(
    [("a", 4, 1), ("b", 3, 2), ("a", 7, 3), ("c", 9, 4), ("d", 1, 5), ("b", 4, 6)],
    type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()]),
).assign_timestamps_and_watermarks(WatermarkStrategy.no_watermarks().with_timestamp_assigner(At()))
(
    values.key_by(lambda v: v[0], key_type=Types.STRING())
    .connect(settings.broadcast(LIMITS, NAMES))
    .process(Report(), output_type=Types.STRING())
    .print()
)
env.execute("several broadcast states")
