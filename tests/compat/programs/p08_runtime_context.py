from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction, RuntimeContext


class Describe(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.info = (
            runtime_context.get_number_of_parallel_subtasks(),
            runtime_context.get_max_number_of_parallel_subtasks(),
            runtime_context.get_attempt_number(),
            runtime_context.get_job_parameter("greeting", "none"),
            runtime_context.get_job_parameter("missing", "fallback"),
        )

    def map(self, value):
        return "%s %s" % (value, self.info)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.get_config().set_global_job_parameters({"greeting": "hello"})
env.from_collection(["a", "b"], type_info=Types.STRING()).map(
    Describe(), output_type=Types.STRING()
).print()
env.execute()
