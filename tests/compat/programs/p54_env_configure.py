"""env.configure(conf) applies parallelism, max parallelism, checkpoint interval and object reuse."""

from pyflink.common import Configuration
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
conf = Configuration()
conf.set_string("pipeline.max-parallelism", "64")
conf.set_string("parallelism.default", "3")
conf.set_string("execution.checkpointing.interval", "5 s")
conf.set_string("pipeline.object-reuse", "true")
env.configure(conf)
print(
    env.get_max_parallelism(),
    env.get_parallelism(),
    env.get_checkpoint_interval(),
    env.get_config().is_object_reuse_enabled(),
)
