from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, ProcessFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Explode(ProcessFunction):
    def process_element(self, value, ctx):
        if value % 3 == 0:
            return None
        if value % 3 == 1:
            yield value
            yield -value
        else:
            return [value * 100]


class Count(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        current = self.count.value()
        if current is None:
            current = 0
        current += 1
        self.count.update(current)
        yield "%s:%s:%d" % (ctx.get_current_key(), value, current)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
nums = env.from_collection(list(range(10)), type_info=Types.INT())
nums.process(Explode(), output_type=Types.INT()).print("explode")
nums.key_by(lambda x: x % 3).process(Count(), output_type=Types.STRING()).print("count")
env.execute("process")
