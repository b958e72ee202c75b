"""Trigger.on_element gets Long.MIN_VALUE as the timestamp of a record without one."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.state import ListStateDescriptor
from pyflink.datastream.window import GlobalWindows, Trigger, TriggerResult

SEEN = ListStateDescriptor("seen", Types.STRING())


class FromRecordTimestamp(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return 1000 if record_timestamp is None else record_timestamp + 5000


class ShowTimestamp(Trigger):
    def on_element(self, element, timestamp, window, ctx):
        ctx.get_partitioned_state(SEEN).add(repr(timestamp))
        return TriggerResult.FIRE

    def on_processing_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def on_event_time(self, time, window, ctx):
        return TriggerResult.CONTINUE

    def can_merge(self):
        return False

    def on_merge(self, window, ctx):
        pass

    def clear(self, window, ctx):
        pass


class Show(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield "trigger saw %s" % list(context.window_state().get_list_state(SEEN).get())


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
source = env.from_collection([("a", 1)], type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
(
    source.key_by(lambda t: t[0], key_type=Types.STRING())
    .window(GlobalWindows.create())
    .trigger(ShowTimestamp())
    .process(Show(), output_type=Types.STRING())
    .print()
)
(
    source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(FromRecordTimestamp())
    )
    .key_by(lambda t: t[0], key_type=Types.STRING())
    .window(GlobalWindows.create())
    .trigger(ShowTimestamp())
    .process(Show(), output_type=Types.STRING())
    .print("assigned")
)
env.execute("untimed timestamp arguments")
