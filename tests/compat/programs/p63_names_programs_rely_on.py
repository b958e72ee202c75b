"""Names and shapes PyFlink programs rely on: KeyedStream.execute_and_collect() yields the
keyed stream's rows (the key pickled when it has no declared type), SlotSharingGroup with its
builder and MemorySize, the metric interfaces, and a helper module added with
add_python_file() and imported inside a function."""

import os
import pickle
import tempfile

from pyflink.common import Configuration, Types
from pyflink.datastream import SlotSharingGroup, StreamExecutionEnvironment
from pyflink.datastream.slot_sharing_group import MemorySize
from pyflink.metrics import Counter, Distribution, Meter, Metric, MetricGroup

print([c.__name__ for c in (MetricGroup, Metric, Counter, Meter, Distribution)])
print(issubclass(Counter, Metric), sorted(Counter.__abstractmethods__))

group = (
    SlotSharingGroup.builder("heavy")
    .set_cpu_cores(1.5)
    .set_task_heap_memory_mb(100)
    .set_task_off_heap_memory(MemorySize.of_mebi_bytes(20))
    .set_external_resource("gpu", 1.0)
    .build()
)
print(group.get_name(), group.get_cpu_cores(), group.get_task_heap_memory())
print(group.get_task_off_heap_memory(), group.get_managed_memory(), group.get_external_resources())
plain = SlotSharingGroup.builder("light").build()
print(
    plain.get_name(),
    plain.get_cpu_cores(),
    plain.get_task_heap_memory(),
    plain.get_external_resources(),
)
print(plain == SlotSharingGroup.builder("light").build(), plain == group)
size = MemorySize.of_mebi_bytes(1024)
print(
    size,
    size.get_bytes(),
    size.get_kibi_bytes(),
    size.get_gibi_bytes(),
    MemorySize(bytes_size=1500),
)
print(
    MemorySize.of_mebi_bytes(1) < size,
    MemorySize(bytes_size=1 << 20) == MemorySize.of_mebi_bytes(1),
)

helper_dir = tempfile.mkdtemp()
with open(os.path.join(helper_dir, "shipped_helper.py"), "w") as f:
    f.write("def shout(s):\n    return s.upper() + '!'\n")

config = Configuration()
config.set_integer("taskmanager.numberOfTaskSlots", 4)
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(1)
env.add_python_file(os.path.join(helper_dir, "shipped_helper.py"))


def shout(s):
    from shipped_helper import shout as helper

    return helper(s)


words = env.from_collection(["a", "b", "a", "c"], type_info=Types.STRING())
words.map(shout, output_type=Types.STRING()).slot_sharing_group(plain).print()
env.execute("helpers and groups")

for row in env.from_collection([("a", 1), ("b", 2)]).key_by(lambda t: t[0]).execute_and_collect():
    print(
        type(row).__name__,
        type(row.f0).__name__,
        pickle.loads(row.f0),
        type(row.f1).__name__,
        pickle.loads(row.f1),
    )
typed = env.from_collection([3, 4, 5], type_info=Types.INT()).key_by(
    lambda x: x % 2, key_type=Types.INT()
)
print(sorted((row[0], row[1]) for row in typed.execute_and_collect()))
print(typed.execute_and_collect(limit=1))
