"""Positional Rows nested in a named Row type get their names at every depth, in Rows, lists,
maps and tuples, as PyFlink's typed records do: read after from_collection (which takes
tuples for nested Rows, and no lists or maps of them, in PyFlink), after a chained map, after
key_by and after rebalance."""

from pyflink.common import Row, Types
from pyflink.datastream import StreamExecutionEnvironment

customer = Types.ROW_NAMED(["name", "tier"], [Types.STRING(), Types.INT()])
item = Types.ROW_NAMED(["sku", "qty"], [Types.STRING(), Types.INT()])
order = Types.ROW_NAMED(
    ["id", "customer", "items", "by_tag", "pair", "array"],
    [
        Types.INT(),
        customer,
        Types.LIST(item),
        Types.MAP(Types.STRING(), item),
        Types.TUPLE([Types.STRING(), customer]),
        Types.OBJECT_ARRAY(customer),
    ],
)


def make(i):
    return Row(
        i,
        Row("cust%d" % i, i + 1),
        [Row("s%d" % i, 1), Row("t%d" % i, 2)],
        {"tag": Row("m%d" % i, 3)},
        ("p", Row("pc%d" % i, 5)),
        [Row("a%d" % i, 6)],
    )


small = Types.ROW_NAMED(
    ["id", "customer", "pair"], [Types.INT(), customer, Types.TUPLE([Types.STRING(), customer])]
)


def describe(label):
    def show(o):
        return "%s id=%d tier=%d name=%s sku=%s qty=%d tagged=%s pair=%s array=%s" % (
            label,
            o.id,
            o.customer.tier,
            o.customer.name,
            o.items[1].sku,
            o.items[0].qty,
            o.by_tag["tag"].sku,
            o.pair[1].name,
            o.array[0].tier,
        )

    return show


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
collected = env.from_collection([(1, ("cust1", 2), ("p", ("pc1", 5)))], type_info=small)
collected.map(
    lambda o: (
        "collection tier=%d name=%s pair=%s" % (o.customer.tier, o.customer.name, o.pair[1].name)
    ),
    output_type=Types.STRING(),
).print()
collected.map(lambda o: repr(o.customer), output_type=Types.STRING()).print("repr")
collected.map(lambda o: str(o.as_dict(recursive=True)), output_type=Types.STRING()).print("dict")
mapped = env.from_collection([2, 3], type_info=Types.INT()).map(make, output_type=order)
mapped.map(describe("chained"), output_type=Types.STRING()).print()
mapped.key_by(lambda o: o.id % 2).map(describe("keyed"), output_type=Types.STRING()).print()
mapped.rebalance().map(describe("rebalanced"), output_type=Types.STRING()).print()
mapped.print("printed")
env.execute("nested rows")
