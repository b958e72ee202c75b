"""MapState.keys() is an iterator read once."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction
from pyflink.datastream.state import MapStateDescriptor


class F(KeyedProcessFunction):
    def open(self, ctx):
        self.m = ctx.get_map_state(MapStateDescriptor("m", Types.INT(), Types.INT()))

    def process_element(self, value, ctx):
        self.m.put(value, value * 10)
        keys = self.m.keys()
        yield "first pass %s, second pass %s" % (sorted(keys), sorted(keys))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([1], type_info=Types.INT()).key_by(lambda x: 0).process(
    F(), output_type=Types.STRING()
).print()
env.execute()
