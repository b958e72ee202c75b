"""Broadcast state read in process_element of a KeyedBroadcastProcessFunction: a reading
whose rule has arrived is judged at once; one whose rule has not waits in keyed list state
and is judged by an event-time timer on the final watermark, so each reading is reported
once whichever input comes first. Readings of a muted sensor go to a side output. Writing
the broadcast state where it is read-only fails as an AttributeError."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.PICKLED_BYTE_ARRAY())
MUTED = OutputTag("muted", Types.STRING())


class At(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class Judge(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.waiting = runtime_context.get_list_state(
            ListStateDescriptor("waiting", Types.PICKLED_BYTE_ARRAY())
        )
        self.tried = runtime_context.get_state(ValueStateDescriptor("tried", Types.BOOLEAN()))

    def process_element(self, value, ctx):
        rules = ctx.get_broadcast_state(RULES)
        if not self.tried.value():
            self.tried.update(True)
            try:
                rules.put(value[0], ("changed", 0))
                yield "%s: the read-only state took a write" % value[0]
            except AttributeError:
                yield "%s: read-only here, has put: %s" % (value[0], hasattr(rules, "put"))
        rule = rules.get(value[0])
        if rule is None:
            self.waiting.add(value)
            ctx.timer_service().register_event_time_timer(value[2])
        else:
            yield from self.judge(value, rule)

    def process_broadcast_element(self, value, ctx):
        ctx.get_broadcast_state(RULES).put(value[0], (value[1], value[2]))
        return None

    def on_timer(self, timestamp, ctx):
        rule = ctx.get_broadcast_state(RULES).get(ctx.get_current_key())
        for value in self.waiting.get():
            if value[2] == timestamp:
                yield from self.judge(value, rule)

    @staticmethod
    def judge(value, rule):
        """The same line whether the rule came before the reading or after it."""
        if rule is None:
            yield "%s=%d at %d: no rule" % (value[0], value[1], value[2])
        elif rule[0] == "mute":
            yield MUTED, "%s=%d at %d" % (value[0], value[1], value[2])
        else:
            verdict = "high" if value[1] > rule[1] else "fine"
            yield "%s=%d at %d: %s (limit %d)" % (value[0], value[1], value[2], verdict, rule[1])


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
rules = env.from_collection(
    [("t1", "max", 30), ("t2", "max", 20), ("t3", "mute", 0), ("t4", "max", 5)],
    type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.INT()]),
)
readings = env.from_collection(
    [
        ("t1", 25, 100),
        ("t2", 21, 110),
        ("t3", 99, 120),
        ("t1", 31, 130),
        ("t4", 5, 140),
        ("t5", 1, 150),
        ("t2", 19, 160),
    ],
    type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()]),
).assign_timestamps_and_watermarks(WatermarkStrategy.no_watermarks().with_timestamp_assigner(At()))
judged = (
    readings.key_by(lambda r: r[0], key_type=Types.STRING())
    .connect(rules.broadcast(RULES))
    .process(Judge(), output_type=Types.STRING())
)
judged.print()
judged.get_side_output(MUTED).print("muted")
env.execute("broadcast state in process_element")
