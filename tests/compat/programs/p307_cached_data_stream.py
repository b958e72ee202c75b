"""DataStream.cache() in BATCH mode: a CachedDataStream that later jobs of the environment read,
with PyFlink's refusals (its name, parallelism and uid are the cache's; a KeyedStream has no
cache). PyFlink 2.3 computes the cached stream again in each local job and its invalidate()
fails once a job ran, so this program shows results only; tests/integration checks that Weir
reads the cache instead of computing it again, and drops it on invalidate() and close()."""

from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.data_stream import CachedDataStream

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
cached = (
    env.from_collection([1, 2, 3], type_info=Types.INT())
    .map(lambda x: x * 10, output_type=Types.INT())
    .cache()
)
print("is a CachedDataStream:", isinstance(cached, CachedDataStream))
with cached.execute_and_collect() as results:
    print("first job:", sorted(results))
cached.map(lambda x: x + 1, output_type=Types.INT()).print("second job")
env.execute("reads the cache")
with cached.map(lambda x: -x, output_type=Types.INT()).execute_and_collect() as results:
    print("third job:", sorted(results))
for method, args in [
    ("set_parallelism", (2,)),
    ("name", ("x",)),
    ("get_name", ()),
    ("uid", ("u",)),
    ("set_uid_hash", ("h",)),
    ("set_max_parallelism", (4,)),
    ("force_non_parallel", ()),
]:
    try:
        getattr(cached, method)(*args)
    except Exception as e:
        print("%s: %s" % (method, e))
try:
    env.from_collection([1], type_info=Types.INT()).key_by(lambda x: x).cache()
except Exception as e:
    print("keyed:", e)
env.close()
