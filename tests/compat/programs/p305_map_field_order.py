"""The keys of a Types.MAP field come back in the order of the Java HashMap the map travelled
through in PyFlink (bucket order of the keys' hash codes), not in the order they were inserted:
for string, int and long keys, maps of several sizes, after from_collection, after a map and
across a rebalance."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

string_maps = [
    {"zeta": 1, "alpha": 2, "mid": 3},
    {"banana": 1, "apple": 2, "cherry": 3, "date": 4},
    {"x": 1, "yy": 2, "zzz": 3, "w": 4, "vv": 5, "uuu": 6, "Aa": 7, "BB": 8},
    {"k%d" % i: i for i in range(20, 0, -1)},
    {"é": 1, "日本": 2, "a": 3, "": 4},
]
int_maps = [
    {100: "a", 3: "b", 17: "c", 16: "d", 1: "e"},
    {24: "a", 8: "b", 0: "c", -1: "d", 65536: "e", 70000: "f"},
    {i * 13: str(i) for i in range(15, 0, -1)},
]
long_maps = [{2**40: "a", 5: "b", -(2**33): "c", 7: "d"}]

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)


def keys(label):
    return lambda m: "%s %s" % (label, list(m.keys()))


for name, maps, key_type in [
    ("string", string_maps, Types.STRING()),
    ("int", int_maps, Types.INT()),
    ("long", long_maps, Types.LONG()),
]:
    map_type = Types.MAP(key_type, Types.INT() if key_type == Types.STRING() else Types.STRING())
    ds = env.from_collection(maps, type_info=map_type)
    ds.map(keys(name + " collection"), output_type=Types.STRING()).print()
    remade = ds.map(lambda m: dict(reversed(list(m.items()))), output_type=map_type)
    remade.rebalance().map(keys(name + " rebalanced"), output_type=Types.STRING()).print()

rows = env.from_collection(
    [Row(1, {"zeta": 1, "alpha": 2, "mid": 3})],
    type_info=Types.ROW_NAMED(["id", "m"], [Types.INT(), Types.MAP(Types.STRING(), Types.INT())]),
)
rows.map(lambda r: "row field %s" % list(r.m.keys()), output_type=Types.STRING()).print()
env.execute("map order")
