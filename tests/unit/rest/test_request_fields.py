"""Reading a REST request's fields strictly: each kind of field with what it takes and
what it refuses (400, naming the field and what came)."""

from __future__ import annotations

import pytest

from weir.rest.errors import RestHandlerError
from weir.rest.request_fields import (
    boolean_field,
    integer_field,
    json_object,
    query_boolean,
    query_integer,
    query_string,
    string_field,
    string_list_field,
)
from weir.rest.routes import RestRequest


def _refused(read, *args) -> str:
    with pytest.raises(RestHandlerError) as info:
        read(*args)
    assert info.value.status == 400
    return str(info.value)


def test_a_body_must_be_a_json_object():
    assert json_object(RestRequest(), "X") == {}
    assert "JSON object (Flink's XBody), got an array" in _refused(
        json_object, RestRequest(body=[1]), "XBody"
    )


@pytest.mark.parametrize("value", [True, False, None])
def test_booleans_are_json_booleans_or_null(value):
    assert boolean_field({"b": value}, "b") is value
    assert boolean_field({}, "b") is None


@pytest.mark.parametrize(
    ("value", "shown"),
    [("false", 'the string "false"'), (0, "the number 0"), ([], "an array"), ({}, "an object")],
)
def test_anything_else_is_not_a_boolean(value, shown):
    message = _refused(boolean_field, {"b": value}, "b")
    assert message.startswith(f'"b" must be true or false, got {shown}')


def test_strings_are_json_strings_without_nul():
    assert string_field({"s": "a b"}, "s") == "a b"
    assert string_field({"s": None}, "s") is None
    assert "got the number 12345" in _refused(string_field, {"s": 12345}, "s")
    assert "got true" in _refused(string_field, {"s": True}, "s")
    assert "holds a NUL character (at position 1)" in _refused(string_field, {"s": "a\0"}, "s")


def test_a_long_string_is_shown_cut_short():
    message = _refused(boolean_field, {"b": "x" * 500}, "b")
    assert len(message) < 200 and '..."' in message


@pytest.mark.parametrize(
    ("value", "read"), [(2, 2), ("2", 2), (" -1 ", -1), ("", None), (None, None)]
)
def test_integers_are_whole_numbers_or_their_text(value, read):
    assert integer_field({"n": value}, "n") == read


@pytest.mark.parametrize("value", [True, 1.5, 2.0, "two", "+-5", "1e3", [1]])
def test_anything_else_is_not_an_integer(value):
    assert '"n" must be a whole number' in _refused(integer_field, {"n": value}, "n")


def test_string_lists_are_arrays_of_strings_without_nul():
    assert string_list_field({"l": ["a", "b"]}, "l") == ["a", "b"]
    assert string_list_field({}, "l") is None
    for bad in ("a b", ["a", 1], [None]):
        assert "must be an array of strings" in _refused(string_list_field, {"l": bad}, "l")
    assert "holds a NUL" in _refused(string_list_field, {"l": ["\0"]}, "l")


def test_query_parameters_of_flinks_booleans_and_numbers_are_read_strictly():
    req = RestRequest(query={"b": "TRUE", "n": "3", "s": "x", "e": ""})
    assert query_boolean(req, "b") is True
    assert query_integer(req, "n") == 3
    assert query_string(req, "s") == "x"
    assert query_boolean(req, "e") is query_integer(req, "e") is query_string(req, "e") is None
    bad = RestRequest(query={"b": "yes", "n": "1.5", "s": "a\0"})
    assert "b='yes' must be true or false" in _refused(query_boolean, bad, "b")
    assert "n='1.5' must be a whole number" in _refused(query_integer, bad, "n")
    assert "query parameter s holds a NUL" in _refused(query_string, bad, "s")
