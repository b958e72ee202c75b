from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor


class Dedup(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.BOOLEAN()))

    def map(self, value):
        first = self.seen.value() is None
        self.seen.update(True)
        return (value[0], value[1], first)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
events = [("u1", "click"), ("u2", "view"), ("u1", "view"), ("u3", "click"), ("u2", "click")]
(
    env.from_collection(events, type_info=Types.TUPLE([Types.STRING(), Types.STRING()]))
    .key_by(lambda e: e[0])
    .map(Dedup(), output_type=Types.TUPLE([Types.STRING(), Types.STRING(), Types.BOOLEAN()]))
    .print()
)
env.execute()
