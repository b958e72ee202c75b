"""ExecutionConfig and environment getters and setters a program may call, and what they
report back."""

from pyflink.common import Configuration, ExecutionConfig
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
config = env.get_config()
print("parallelism", env.get_parallelism(), config.get_parallelism())
print("max parallelism", env.get_max_parallelism(), config.get_max_parallelism())
print("auto watermark", config.get_auto_watermark_interval())
config.set_auto_watermark_interval(123)
print("auto watermark", config.get_auto_watermark_interval())
print("latency", config.get_latency_tracking_interval())
print(
    "closure",
    config.is_closure_cleaner_enabled() if hasattr(config, "is_closure_cleaner_enabled") else "-",
)
print("object reuse", config.is_object_reuse_enabled())
config.enable_object_reuse()
print("object reuse", config.is_object_reuse_enabled())
config.disable_object_reuse()
print("object reuse", config.is_object_reuse_enabled())
print(
    "task cancellation",
    config.get_task_cancellation_interval(),
    config.get_task_cancellation_timeout(),
)
config.set_task_cancellation_interval(5000)
print("task cancellation", config.get_task_cancellation_interval())
print("global params", config.get_global_job_parameters())
config.set_global_job_parameters({"a": "1"})
print("global params", sorted(config.get_global_job_parameters().items()))
print("is ExecutionConfig", isinstance(config, ExecutionConfig))
env.set_parallelism(3)
print("parallelism", env.get_parallelism())
env.set_max_parallelism(64)
print("max parallelism", env.get_max_parallelism())
print("buffer timeout", env.get_buffer_timeout())
env.set_buffer_timeout(50)
print("buffer timeout", env.get_buffer_timeout())
print("chaining", env.is_chaining_enabled())
env.disable_operator_chaining()
print("chaining", env.is_chaining_enabled())
print("checkpointing", env.get_checkpoint_interval(), env.get_checkpointing_mode())
env.enable_checkpointing(1000)
print("checkpointing", env.get_checkpoint_interval(), env.get_checkpointing_mode())
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
conf = Configuration()
conf.set_string("k", "v")
print("configuration", conf.get_string("k", "d"), conf.get_string("x", "d"), conf.contains_key("k"))
print("keys", sorted(conf.key_set()))
print("int", conf.get_integer("n", 7), conf.get_boolean("b", True), conf.get_float("f", 1.5))
conf.set_integer("n", 3)
print("int", conf.get_integer("n", 7), conf.to_dict())
