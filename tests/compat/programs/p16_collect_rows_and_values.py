from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
ds = env.from_collection(
    [(1, "a"), (2, "b"), (3, "c")], type_info=Types.TUPLE([Types.INT(), Types.STRING()])
)
rows = list(
    ds.map(
        lambda t: Row(id=t[0], name=t[1].upper()),
        output_type=Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()]),
    ).execute_and_collect()
)
for r in rows:
    print(r, r.id, r["name"], r.as_dict(), isinstance(r, Row))
tuples = list(
    ds.map(
        lambda t: (t[1], t[0] * 1.5), output_type=Types.TUPLE([Types.STRING(), Types.DOUBLE()])
    ).execute_and_collect()
)
print(tuples, [type(t).__name__ for t in tuples])
untyped = list(ds.map(lambda t: {"k": t[0]}).execute_and_collect())
print(untyped)
