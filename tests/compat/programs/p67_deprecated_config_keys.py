"""Flink's deprecated configuration keys still apply: pipeline.operator-chaining and
execution.buffer-timeout, given to get_execution_environment or to configure()."""

from pyflink.common import Configuration, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, RuntimeContext


class TaskName(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.name = runtime_context.get_task_name()

    def map(self, value):
        return "%s %s" % (value, self.name)


config = Configuration()
config.set_string("pipeline.operator-chaining", "false")
config.set_string("execution.buffer-timeout", "1 min")
env = StreamExecutionEnvironment.get_execution_environment(config)
print(env.is_chaining_enabled(), env.get_buffer_timeout())
env.set_parallelism(1)
env.set_buffer_timeout(50)
env.from_collection(["x"], type_info=Types.STRING()).map(TaskName(), Types.STRING()).print()
env.execute("unchained")

other = StreamExecutionEnvironment.get_execution_environment()
print(other.is_chaining_enabled(), other.get_buffer_timeout())
later = Configuration()
later.set_string("pipeline.operator-chaining", "false")
later.set_string("execution.buffer-timeout", "2 s")
other.configure(later)
print(other.is_chaining_enabled(), other.get_buffer_timeout())
