"""reduce, sum, min, max, min_by and max_by on a keyed stream of named Rows, by name and by
position, and what each one keeps of the other fields."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
row_type = Types.ROW_NAMED(["k", "v", "tag"], [Types.STRING(), Types.INT(), Types.STRING()])
data = env.from_collection(
    [
        Row(k="a", v=3, tag="first"),
        Row(k="b", v=1, tag="one"),
        Row(k="a", v=1, tag="second"),
        Row(k="a", v=3, tag="third"),
        Row(k="b", v=5, tag="two"),
        Row(k="a", v=0, tag="fourth"),
    ],
    type_info=row_type,
)
keyed = data.key_by(lambda r: r.k, key_type=Types.STRING())
keyed.sum("v").print("sum")
keyed.min("v").print("min")
keyed.max(1).print("max")
keyed.min_by("v").print("min_by")
keyed.max_by(1).print("max_by")
keyed.reduce(lambda a, b: Row(k=a.k, v=a.v + b.v, tag=a.tag + "+" + b.tag)).print("reduce")
env.execute("keyed aggregates on rows")
