from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
ds = env.from_collection(list(range(20)), type_info=Types.INT())
squares = sorted(ds.map(lambda x: x * x, output_type=Types.INT()).execute_and_collect())
print("squares", squares)
with ds.filter(lambda x: x % 2 == 0).execute_and_collect() as results:
    print("evens", sorted(results))
first = ds.map(lambda x: x + 1000, output_type=Types.INT()).execute_and_collect(limit=3)
print("limited", type(first).__name__, len(first))
final = {}
for key, total in (
    ds.map(lambda x: (x % 3, x), output_type=Types.TUPLE([Types.INT(), Types.INT()]))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .execute_and_collect()
):
    final[key] = max(final.get(key, 0), total)
print("final sums", sorted(final.items()))
