from __future__ import annotations

import pickle

import pytest

from weir.common import Configuration, Duration, Row, RowKind, Time, Types, WatermarkStrategy
from weir.common.typeinfo import key_type_name, read_back, serializer_kind_of
from weir.core.job_graph import SerializerKind


class TestRow:
    def test_named_fields_keep_their_order_and_are_reachable(self):
        # PyFlink 2.3: Row(name="Alice", age=11) -> Row(name='Alice', age=11)
        row = Row(name="Alice", age=11)
        assert repr(row) == "Row(name='Alice', age=11)"
        assert row["name"] == row.name == row[0] == "Alice"
        assert row.as_dict() == {"name": "Alice", "age": 11}

    def test_positional_repr_and_equality(self):
        assert repr(Row(1, "a")) == "<Row(1, 'a')>"
        assert Row(1, 2) == Row(1, 2)
        assert Row(1, 2) != Row(a=1, b=2)
        assert Row(1, 2) != (1, 2)
        assert hash(Row(1, 2)) == hash((1, 2))

    def test_row_class(self):
        person = Row("name", "age")
        alice = person("Alice", 11)
        assert repr(alice) == "Row(name='Alice', age=11)"

    def test_contains_searches_names_of_named_rows_and_values_of_positional_ones(self):
        # as PyFlink 2.3 does
        assert "name" in Row(name="Alice")
        assert "Alice" not in Row(name="Alice")
        assert "Alice" in Row("Alice", 11)

    def test_setitem_kind_and_pickle(self):
        row = Row(a=1, b=2)
        row["b"] = 5
        row[0] = 4
        row.set_row_kind(RowKind.DELETE)
        copy = pickle.loads(pickle.dumps(row))
        assert copy == row and copy.get_row_kind() is RowKind.DELETE
        with pytest.raises(AttributeError):
            row.c = 3

    def test_recursive_as_dict_and_unnamed_fails(self):
        row = Row(key=1, value=Row(name="a", age=2))
        assert row.as_dict(True) == {"key": 1, "value": {"name": "a", "age": 2}}
        with pytest.raises(TypeError):
            Row(1).as_dict()


class TestTypes:
    @pytest.mark.parametrize(
        "t",
        [
            Types.STRING(),
            Types.INT(),
            Types.LONG(),
            Types.DOUBLE(),
            Types.BOOLEAN(),
            Types.TUPLE([Types.STRING(), Types.INT()]),
            Types.LIST(Types.INT()),
            Types.MAP(Types.STRING(), Types.LONG()),
            Types.PRIMITIVE_ARRAY(Types.INT()),
        ],
    )
    def test_primitive_shapes_marshal(self, t):
        assert serializer_kind_of(t) is SerializerKind.MARSHAL

    @pytest.mark.parametrize(
        "t",
        [
            None,
            Types.PICKLED_BYTE_ARRAY(),
            Types.ROW([Types.INT()]),
            Types.BIG_DEC(),
            Types.SQL_DATE(),
            Types.TUPLE([Types.INT(), Types.ROW([Types.INT()])]),
        ],
    )
    def test_others_pickle(self, t):
        assert serializer_kind_of(t) is SerializerKind.PICKLE

    def test_print_as_pyflinks(self):
        assert repr(Types.ROW([Types.INT(), Types.STRING()])) == "RowTypeInfo(Integer, String)"
        named = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])
        assert repr(named) == "RowTypeInfo(id: Long, name: String)"
        assert [repr(t) for t in (Types.SQL_DATE(), Types.SQL_TIME(), Types.SQL_TIMESTAMP())] == [
            "DateTypeInfo",
            "TimeTypeInfo",
            "TimestampTypeInfo",
        ]
        assert repr(Types.PICKLED_BYTE_ARRAY()) == "PickledByteArrayTypeInfo"

    def test_read_back_names_every_row_type(self):
        row = Types.ROW([Types.INT()])
        nested = Types.TUPLE([Types.LIST(row), Types.MAP(Types.STRING(), row)])
        assert repr(read_back(nested)) == (
            "TupleTypeInfo(ListTypeInfo<RowTypeInfo(f0: Integer)>, "
            "MapTypeInfo<String, RowTypeInfo(f0: Integer)>)"
        )
        assert repr(row) == "RowTypeInfo(Integer)"  # the declared type is left as it was
        assert read_back(row) == row
        assert read_back(Types.INT()) == Types.INT()

    def test_row_types_are_equal_by_field_types_and_named_once_asked(self):
        row = Types.ROW([Types.INT(), Types.STRING()])
        named = Types.ROW_NAMED(["x", "y"], [Types.INT(), Types.STRING()])
        assert row == named
        assert hash(row) == hash(named)
        assert row.get_field_names() == ["f0", "f1"]
        assert repr(row) == "RowTypeInfo(f0: Integer, f1: String)"

    def test_key_type_names(self):
        assert key_type_name(None) == "pickled"
        assert key_type_name(Types.STRING()) == "String"
        assert key_type_name(Types.TUPLE([Types.STRING(), Types.INT()])) == "Tuple<String, Integer>"
        nested = Types.ROW_NAMED(["a", "b"], [Types.TUPLE([Types.LONG()]), Types.DOUBLE()])
        assert key_type_name(nested) == "Row<Tuple<Long>, Double>"
        # A field of a type keys are not hashed by: its name marks the whole as pickled.
        assert key_type_name(Types.TUPLE([Types.LIST(Types.INT())])) == "Tuple<pickled>"

    def test_row_named(self):
        t = Types.ROW_NAMED(["k", "v"], [Types.STRING(), Types.INT()])
        assert t.get_field_names() == ["k", "v"]
        assert t.to_row(("a", 1)).v == 1
        assert Types.INT() == Types.INT()
        with pytest.raises(ValueError):
            Types.ROW_NAMED(["k"], [Types.STRING(), Types.INT()])


class TestConfiguration:
    def test_typed_getters_and_setters(self):
        config = Configuration()
        config.set_integer("a", 3).set_boolean("b", True).set_float("c", 1.5)
        config.set_string("d", "x")
        assert config.get_integer("a", 0) == 3
        assert config.get_string("a", "") == "3"
        assert config.get_boolean("b", False) is True
        assert config.get_float("c", 0.0) == 1.5
        assert config.get_integer("missing", 7) == 7
        assert config.contains_key("d") and not config.contains_key("e")
        assert config.key_set() == {"a", "b", "c", "d"} == config.keys()
        assert config.to_dict()["b"] == "true"
        assert config.remove_config("d") and not config.contains_key("d")
        assert Configuration(config) == config

    def test_bad_integer_is_named(self):
        config = Configuration().set_string("k", "abc")
        with pytest.raises(ValueError, match="'k'"):
            config.get_integer("k", 0)

    def test_prints_and_lists_its_keys_in_flinks_hash_map_order(self):
        """As PyFlink's, a Java HashMap behind: str() in its bucket order with secrets
        hidden; to_dict() in the order of the smaller copy Flink hands out."""
        config = Configuration()
        for key in ("i", "b", "s", "f"):
            config.set_string(key, key.upper())
        # "i" (105) falls in bucket 9 of 16 but bucket 1 of the 8 of the copy.
        assert str(config) == "{b=B, s=S, f=F, i=I}"
        assert list(config.to_dict()) == ["i", "b", "s", "f"]
        assert str(Configuration().set_string("db.password", "x")) == "{db.password=******}"
        assert str(Configuration()) == "{}"


class TestTime:
    def test_duration_and_time(self):
        assert Duration.of_seconds(2).to_milliseconds() == 2000
        assert Duration.of_minutes(1).to_milliseconds() == 60_000
        assert Duration.of_hours(1).to_milliseconds() == 3_600_000
        assert Duration.of_days(1).to_milliseconds() == 86_400_000
        assert Duration.of_millis(5) == Duration.of_millis(5)
        assert Time.seconds(3).to_milliseconds() == 3000
        assert Time.minutes(1).to_milliseconds() == 60_000
        assert Time.hours(2).to_milliseconds() == 7_200_000
        assert Time.days(1).to_milliseconds() == 86_400_000
        assert Time.milliseconds(9).to_milliseconds() == 9

    def test_print_as_pyflinks(self):
        """Time prints as "5000 ms"; neither has a repr of its own, as in PyFlink."""
        assert str(Time.seconds(5)) == "5000 ms"
        assert repr(Time.seconds(5)).startswith("<weir.common.time.Time object at ")
        assert str(Duration.of_seconds(5)).startswith("<weir.common.time.Duration object at ")

    def test_watermark_strategy_keeps_settings(self):
        ws = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5)).with_idleness(
            Duration.of_seconds(1)
        )
        assert ws.max_out_of_orderness_ms == 5000 and ws.idle_timeout_ms == 1000
        assert WatermarkStrategy.for_monotonous_timestamps().kind == "monotonous"
        assert WatermarkStrategy.no_watermarks().timestamp_assigner is None


def test_row_of_kind_and_the_short_row_kind_names() -> None:
    row = Row.of_kind(RowKind.UPDATE_AFTER, 1, "x")
    assert row.get_row_kind() is RowKind.UPDATE_AFTER
    assert list(row) == [1, "x"]
    assert [str(kind) for kind in RowKind] == ["+I", "-U", "+U", "-D"]


def test_parse_list_value_reads_yaml_lists_and_semicolons() -> None:
    assert Configuration.parse_list_value("[1, x]") == [1, "x"]
    assert Configuration.parse_list_value("a;b") == ["a", "b"]
    assert Configuration.parse_list_value("") == []


def test_restart_strategies_import_but_fail_as_in_pyflink_2() -> None:
    from weir.common import RestartStrategies

    with pytest.raises(TypeError, match="restart-strategy.fixed-delay.attempts"):
        RestartStrategies.fixed_delay_restart(3, 1000)
    with pytest.raises(TypeError, match="restart-strategy.type: none"):
        RestartStrategies.no_restart()
