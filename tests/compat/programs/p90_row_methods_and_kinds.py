"""Row's own methods in user functions: as_dict, kinds, equality, field access, repr and the
printed form of each kind."""

from pyflink.common import Row, RowKind, Types
from pyflink.datastream import StreamExecutionEnvironment


def describe(row):
    copy = Row(*row)
    kinds = []
    for kind in (RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE):
        r = Row(*row)
        r.set_row_kind(kind)
        kinds.append("%s %s %s" % (kind, r.get_row_kind(), repr(r)))
    return [
        repr(row),
        str(row.as_dict()),
        str(copy == row),
        str(Row(1, 2) == (1, 2)),
        str(len(row)),
        str("name" in row),
        str(list(row)),
        *kinds,
    ]


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
rows = env.from_collection(
    [Row(name="ann", n=1), Row(name="bo", n=2)],
    type_info=Types.ROW_NAMED(["name", "n"], [Types.STRING(), Types.INT()]),
)
rows.flat_map(describe, output_type=Types.STRING()).print("describe")


def with_kind(row):
    out = Row(row.name, row.n * 10)
    out.set_row_kind(RowKind.UPDATE_AFTER if row.n > 1 else RowKind.DELETE)
    return out


rows.map(with_kind, output_type=Types.ROW([Types.STRING(), Types.INT()])).print("kinds")
rows.map(with_kind).print("untyped kinds")
env.execute("row methods")
