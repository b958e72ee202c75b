"""Names, uids, descriptions and types a program reads back from its streams."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
src = env.from_collection([(1, "a")], type_info=Types.TUPLE([Types.INT(), Types.STRING()]))
print("source", src.get_name(), src.get_type())
m = src.map(lambda x: x[1], output_type=Types.STRING()).name("to string").uid("u1")
print("map", m.get_name(), m.get_type())
m.set_description("turns a pair into its word")
print("untyped", src.map(lambda x: x).get_type())
print("filter", src.filter(lambda x: True).get_type(), src.filter(lambda x: True).get_name())
keyed = src.key_by(lambda x: x[0])
print("keyed", type(keyed).__name__, keyed.get_type())
try:
    keyed.get_name()
except Exception as e:
    print("keyed name", e)
print("union", src.union(src).get_type())
print("keyed by", src.key_by(lambda x: x[1], key_type=Types.STRING()).get_type())
row_type = Types.ROW([Types.INT(), Types.STRING()])
print("declared", row_type, row_type == Types.ROW_NAMED(["x", "y"], [Types.INT(), Types.STRING()]))
print("names", row_type.get_field_names(), row_type)
print("flat", src.flat_map(lambda x: [x[0]], output_type=Types.INT()).get_type())
print(
    "rows",
    src.map(lambda x: Row(*x), output_type=Types.ROW([Types.INT(), Types.STRING()])).get_type(),
)
m.print()
env.execute("names and types")
