from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
rows = [
    Row(user="ann", item="pen", qty=2),
    Row(user="bob", item="ink", qty=5),
    Row(user="ann", item="cup", qty=1),
    Row(user="cid", item="pen", qty=7),
    Row(user="bob", item="pad", qty=3),
    Row(user="ann", item="ink", qty=4),
]
row_type = Types.ROW_NAMED(["user", "item", "qty"], [Types.STRING(), Types.STRING(), Types.INT()])
ds = env.from_collection(rows, type_info=row_type)
keyed = ds.key_by(lambda r: r.user, key_type=Types.STRING())
keyed.map(lambda r: "%s bought %d" % (r.user, r.qty), output_type=Types.STRING()).print("map")
keyed.filter(lambda r: r.qty > 2).print("filter")
keyed.flat_map(lambda r: [r.item] * r.qty, output_type=Types.STRING()).print("flat")
keyed.max_by("qty").print("max_by")
keyed.min("qty").print("min")
env.execute("keyed stream ops")
