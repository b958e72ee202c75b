"""pipeline.global-job-parameters given in a Configuration reach RuntimeContext.get_job_parameter."""

from pyflink.common import Configuration, Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import MapFunction


class M(MapFunction):
    def open(self, rc):
        self.a = rc.get_job_parameter("a", "unset")

    def map(self, value):
        return "%s a=%s" % (value, self.a)


config = Configuration()
config.set_string("pipeline.global-job-parameters", "a:1,b:2")
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(1)
env.from_collection(["x"], type_info=Types.STRING()).map(M(), output_type=Types.STRING()).print()
env.execute()
