"""Row equality, hashing and repr as PyFlink has them: named Rows are equal when they hold the
same value under each name, whatever the order of their names; a named Row never equals a
positional one; the hash is the hash of the values in order; a positional Row prints as
<Row(...)>. Checked in the client and inside a job."""

from pyflink.common import Row, RowKind, Types
from pyflink.datastream import StreamExecutionEnvironment


def table():
    ab = Row(a=1, b=2)
    ba = Row(b=2, a=1)
    pos = Row(1, 2)
    named_later = Row(1, 2)
    named_later.set_field_names(["a", "b"])
    deleted = Row(a=1, b=2)
    deleted.set_row_kind(RowKind.DELETE)
    other_names = Row(a=1, c=2)
    Person = Row("name", "age")
    lines = [
        "ab == ba: %s" % (ab == ba),
        "ba == ab: %s" % (ba == ab),
        "ab != ba: %s" % (ab != ba),
        "ab == pos: %s" % (ab == pos),
        "pos == ab: %s" % (pos == ab),
        "pos == Row(1, 2): %s" % (pos == Row(1, 2)),
        "pos == (1, 2): %s" % (pos == (1, 2)),
        "ab == named later: %s" % (ab == named_later),
        "ab == deleted: %s" % (ab == deleted),
        "ab == other names: %s" % (ab == other_names),
        "Row(a=1, b=Row(x=1, y=2)) == Row(b=Row(y=2, x=1), a=1): %s"
        % (Row(a=1, b=Row(x=1, y=2)) == Row(b=Row(y=2, x=1), a=1)),
        "hash(ab) == hash(ba): %s" % (hash(ab) == hash(ba)),
        "hash(ab) == hash((1, 2)): %s" % (hash(ab) == hash((1, 2))),
        "hash(ba) == hash((2, 1)): %s" % (hash(ba) == hash((2, 1))),
        "hash(pos) == hash((1, 2)): %s" % (hash(pos) == hash((1, 2))),
        "len({ab, ba}): %d" % len({ab, ba}),
        "len({ab, pos}): %d" % len({ab, pos}),
        "ba in [ab]: %s" % (ba in [ab]),
        "repr(ab): %r" % (ab,),
        "repr(ba): %r" % (ba,),
        "repr(pos): %r" % (pos,),
        "repr(Row()): %r" % (Row(),),
        "repr(Person): %r" % (Person,),
        "repr(Person('ann', 3)): %r" % (Person("ann", 3),),
        "repr(named later): %r" % (named_later,),
        "repr(deleted): %r" % (deleted,),
        "str(ab): %s" % (ab,),
        "repr nested: %r" % (Row(k="x", v=Row(1, Row(n=2))),),
        "as_dict ba: %s" % (ba.as_dict(),),
        "get_fields_by_names: %s" % (ba.get_fields_by_names(["a", "b"]),),
        "get_fields_by_names positional: %s" % (pos.get_fields_by_names(["z"]),),
    ]
    try:
        ab.get_fields_by_names(["a", "z"])
    except Exception as e:
        lines.append("get_fields_by_names missing: %s %s" % (type(e).__name__, e))
    return lines


for line in table():
    print("client " + line)

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([0], type_info=Types.INT()).flat_map(
    lambda _: ["job " + line for line in table()], output_type=Types.STRING()
).print()
rows = env.from_collection(
    [Row(b=2, a=1), Row(a=1, b=2)],
    type_info=Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.INT()]),
)
rows.map(
    lambda r: "typed %r == Row(b=2, a=1): %s" % (r, r == Row(b=2, a=1)), output_type=Types.STRING()
).print()
env.execute("row equality")
