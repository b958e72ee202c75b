"""KeyedStream.execute_and_collect() at parallelism 2: the rows come in the order of the stream
keyed (a collection, read by one subtask), with the key as declared or pickled."""

import pickle

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
data = [("flink", 1), ("datastream", 2), ("flink", 1), ("collect", 2)]
typed = env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
with typed.key_by(lambda i: i[0], Types.STRING()).execute_and_collect() as results:
    rows = list(results)
print(rows)
print(rows == [Row(f0=k, f1=(k, n)) for k, n in data])
untyped = env.from_collection(data)
for row in untyped.key_by(lambda i: i[1]).execute_and_collect():
    print(pickle.loads(row.f0), pickle.loads(row.f1), row)
