"""Removing MapState entries through the iterator keys() returns."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import MapStateDescriptor


class F(KeyedProcessFunction):
    def open(self, ctx):
        self.m = ctx.get_map_state(MapStateDescriptor("m", Types.INT(), Types.INT()))

    def process_element(self, value, ctx):
        self.m.put(value, value * 10)
        it = self.m.keys()
        for k in it:
            if k % 2 == 0:
                it.remove()
        yield "after %d: %s" % (value, sorted(self.m.items()))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1, 2, 3], type_info=Types.INT()).key_by(lambda x: 0).process(
    F(), output_type=Types.STRING()
).print()
env.execute()
