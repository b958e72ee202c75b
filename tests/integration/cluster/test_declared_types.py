"""Declared output types on a cluster: a record goes through its type's coder where PyFlink
serialises it and nowhere else, and a value the coder refuses fails the job with an error
that names the operator, the declared type and the value."""

from __future__ import annotations

import pytest

from weir.common import Row, Types
from weir.core.errors import JobExecutionError
from weir.datastream import StreamExecutionEnvironment

pytestmark = pytest.mark.spark

ROW_A = Types.ROW_NAMED(["a"], [Types.INT()])
EXTRAS = Types.ROW_NAMED(["extras"], [Types.MAP(Types.STRING(), Types.INT())])


def new_env(parallelism: int = 1) -> StreamExecutionEnvironment:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(parallelism)
    return env


def collected(stream) -> list:
    with stream.execute_and_collect() as results:
        return list(results)


def failure_of(stream) -> str:
    with pytest.raises(JobExecutionError) as info:
        collected(stream)
    assert info.value.status == "FAILED"
    return info.value.cause


def test_a_value_its_declared_type_refuses_fails_the_job_naming_operator_type_and_value(cluster):
    env = new_env()
    made = env.from_collection([1], type_info=Types.INT()).map(lambda x: "abc", Types.LONG())
    cause = failure_of(made.name("to long").rebalance().map(str))
    assert "DeclaredTypeError" in cause
    assert "operator 'to long' emitted 'abc'" in cause
    assert "Types.LONG()" in cause
    assert "an int in [-9223372036854775808, 9223372036854775807]" in cause
    # the cluster serves the next job
    assert collected(new_env().from_collection([2], type_info=Types.INT()).map(str)) == ["2"]


def test_a_tuple_field_is_named_and_extra_fields_are_dropped(cluster):
    pair = Types.TUPLE([Types.STRING(), Types.INT()])
    env = new_env()
    source = env.from_collection([1], type_info=Types.INT())
    cause = failure_of(source.map(lambda x: ("a", "b"), pair).name("pairs").rebalance().map(str))
    assert "field 1 of the record is 'b' (str)" in cause
    env = new_env()
    source = env.from_collection([1], type_info=Types.INT())
    assert collected(source.map(lambda x: ("a", 1, 2), pair).rebalance().map(repr)) == ["('a', 1)"]


def test_between_fused_functions_a_record_is_as_made(cluster):
    env = new_env()
    source = env.from_collection([1], type_info=Types.INT())
    # a LONG that is a str reaches the map fused with its maker unchecked
    fused = source.map(lambda x: "abc", Types.LONG()).map(lambda v: v + "!")
    assert collected(fused) == ["abc!"]
    env = new_env()
    extras = env.from_collection([1], type_info=Types.INT()).map(
        lambda _: Row(extras={"bags": 1, "lounge": 2}), output_type=EXTRAS
    )
    assert collected(extras.map(lambda r: list(r.extras))) == [["bags", "lounge"]]
    env = new_env()
    extras = env.from_collection([1], type_info=Types.INT()).map(
        lambda _: Row(extras={"bags": 1, "lounge": 2}), output_type=EXTRAS
    )
    # across a shuffle it comes in Java HashMap order
    assert collected(extras.rebalance().map(lambda r: list(r.extras))) == [["lounge", "bags"]]


def test_a_positional_row_has_its_names_only_once_coded(cluster):
    env = new_env()
    rows = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: Row(x), ROW_A)
    assert "AttributeError" in failure_of(rows.map(lambda r: r.a * 10))
    env = new_env()
    rows = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: Row(x), ROW_A)
    assert sorted(collected(rows.rebalance().map(lambda r: r.a * 10))) == [10, 20]


# long: a job at parallelism 2 whose key selector fails takes minutes to end after a job at
# parallelism 1 on the same cluster (the failover waits for a pending slot request).
@pytest.mark.long
def test_key_by_takes_the_key_from_the_record_as_made(cluster):
    env = new_env(parallelism=2)
    rows = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: Row(x), ROW_A)
    assert "AttributeError" in failure_of(rows.key_by(lambda r: r.a).map(lambda r: r.a))
    env = new_env(parallelism=2)
    rows = env.from_collection([1, 2], type_info=Types.INT()).map(lambda x: Row(x), ROW_A)
    # the keyed function reads the coded Row: named
    keyed = rows.key_by(lambda r: r[0]).map(lambda r: r.a * 10)
    assert sorted(collected(keyed)) == [10, 20]
