"""execute_and_collect() of typed and untyped streams: Rows keep their names, tuples stay
tuples, floats, None, nested lists; with a limit the first elements only."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
named = Types.ROW_NAMED(["id", "tags"], [Types.INT(), Types.LIST(Types.STRING())])
rows = env.from_collection([(1, ["x"]), (2, [])], type_info=named)
for row in rows.execute_and_collect():
    print(repr(row), row.id, row["tags"], row.as_dict())
mixed = env.from_collection([(1, None, 2.5, [1, [2]]), ("s", True, -0.0, {"k": 1})])
print(list(mixed.execute_and_collect()))
pairs = env.from_collection(
    [("a", 1), ("b", 2), ("c", 3)], type_info=Types.TUPLE([Types.STRING(), Types.INT()])
)
print(pairs.execute_and_collect(limit=2))
print(pairs.map(lambda t: Row(t[0], t[1] * 0.5)).execute_and_collect(limit=5))
doubled = pairs.map(lambda t: t[1] * 2.0, output_type=Types.DOUBLE())
with doubled.execute_and_collect("named job") as results:
    print([type(r).__name__ + ":" + str(r) for r in results])
