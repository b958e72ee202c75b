"""ListState.get() of a fresh state is empty but true, as PyFlink's iterable."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import ListStateDescriptor


class F(KeyedProcessFunction):
    def open(self, ctx):
        self.l = ctx.get_list_state(ListStateDescriptor("l", Types.INT()))

    def process_element(self, value, ctx):
        yield "%d: %s" % (value, "has history" if self.l.get() else "first")
        self.l.add(value)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1, 2], type_info=Types.INT()).key_by(lambda x: 0).process(
    F(), output_type=Types.STRING()
).print()
env.execute()
