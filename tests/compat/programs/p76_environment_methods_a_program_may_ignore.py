"""Environment and ExecutionConfig calls programs make and that change nothing visible here:
jars, classpaths, Python executable, cached files, slot sharing groups, object reuse, closure
cleaner, latency tracking, restart-free settings; what each reads back, and a job that runs."""

import os
import sys
import tempfile
import zipfile

from pyflink.common import Configuration, Types
from pyflink.datastream import SlotSharingGroup, StreamExecutionEnvironment

directory = tempfile.mkdtemp()
jar = os.path.join(directory, "empty.jar")
with zipfile.ZipFile(jar, "w") as archive:
    archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
cached = os.path.join(directory, "cached.txt")
with open(cached, "w") as f:
    f.write("cached\n")

slots = Configuration()
slots.set_integer("taskmanager.numberOfTaskSlots", 2)  # a slot per slot sharing group
env = StreamExecutionEnvironment.get_execution_environment(slots)
env.set_parallelism(1)
env.add_jars("file://" + jar)
env.add_classpaths("file://" + directory + "/")
env.set_python_executable(sys.executable)
env.register_cached_file(cached, "cached")
env.register_slot_sharing_group(SlotSharingGroup.builder("shared").build())
env.set_buffer_timeout(20)
env.set_max_parallelism(64)
env.disable_operator_chaining()
config = env.get_config()
config.enable_object_reuse()
config.set_auto_watermark_interval(300)
config.disable_closure_cleaner()
config.set_latency_tracking_interval(1000)
config.set_global_job_parameters({"mode": "test"})
print(
    env.get_parallelism(),
    env.get_max_parallelism(),
    env.get_buffer_timeout(),
    env.is_chaining_enabled(),
    config.is_object_reuse_enabled(),
    config.get_auto_watermark_interval(),
    config.get_latency_tracking_interval(),
    config.get_global_job_parameters(),
)
config.disable_object_reuse()
config.enable_closure_cleaner()
print(config.is_object_reuse_enabled(), config.is_closure_cleaner_enabled())
env.from_collection([1, 2, 3], type_info=Types.INT()).map(
    lambda x: x * 2, output_type=Types.INT()
).slot_sharing_group("shared").print()
env.execute("ignored settings")
