"""pipeline.* and other keys of a Configuration read back through env.get_config()."""

from pyflink.common import Configuration
from pyflink.datastream import StreamExecutionEnvironment

config = Configuration()
config.set_string("pipeline.object-reuse", "true")
config.set_string("pipeline.auto-watermark-interval", "500 ms")
config.set_string("pipeline.closure-cleaner-level", "NONE")
config.set_string("pipeline.global-job-parameters", "a:1,b:2")
config.set_string("pipeline.auto-generate-uids", "false")
config.set_string("execution.buffer-timeout.interval", "50 ms")
config.set_string("execution.checkpointing.snapshot-compression", "true")
config.set_string("parallelism.default", "3")
env = StreamExecutionEnvironment.get_execution_environment(config)
ec = env.get_config()
print("object reuse", ec.is_object_reuse_enabled())
print("watermark interval", ec.get_auto_watermark_interval())
print("closure cleaner", ec.is_closure_cleaner_enabled())
print("global params", ec.get_global_job_parameters())
print("auto uids", ec.has_auto_generated_uids_enabled())
print("buffer timeout", env.get_buffer_timeout())
print("compression", ec.is_use_snapshot_compression())
print("parallelism", env.get_parallelism(), ec.get_parallelism())
