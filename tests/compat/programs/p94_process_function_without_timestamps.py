"""What a ProcessFunction's context says when records carry no timestamps and no watermark
has arrived yet, keyed and not."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessFunction


class Plain(ProcessFunction):
    def process_element(self, value, ctx):
        yield "plain %s ts=%s wm=%s" % (
            value,
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )


class Keyed(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield "keyed %s key=%s ts=%s wm=%s" % (
            value,
            ctx.get_current_key(),
            ctx.timestamp(),
            ctx.timer_service().current_watermark(),
        )


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = env.from_collection([1, 2, 3], type_info=Types.INT())
data.process(Plain(), output_type=Types.STRING()).print()
data.key_by(lambda x: x % 2).process(Keyed(), output_type=Types.STRING()).print()
env.execute("no timestamps")
