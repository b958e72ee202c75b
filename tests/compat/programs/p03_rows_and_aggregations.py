from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
data = [("a", 3, 1.5), ("b", 1, 2.0), ("a", 7, 0.5), ("b", 5, 4.0), ("a", 2, 9.0)]
ds = env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.DOUBLE()]))
keyed = ds.key_by(lambda t: t[0])
keyed.sum(1).print("sum")
keyed.min(1).print("min")
keyed.max(2).print("max")
keyed.min_by(1).print("min_by")
keyed.max_by(2).print("max_by")
rows = ds.map(lambda t: Row(t[0], t[1] * 2), output_type=Types.ROW([Types.STRING(), Types.INT()]))
rows.print("row")
named = ds.map(
    lambda t: Row(name=t[0], score=t[1]),
    output_type=Types.ROW_NAMED(["name", "score"], [Types.STRING(), Types.INT()]),
)
named.key_by(lambda r: r.name).sum("score").print("named")
env.execute("aggregations")
