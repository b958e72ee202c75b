"""Keys of queryable state cross the network as checked marshal bytes, never pickles."""

from __future__ import annotations

import marshal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.core.queryable_keys import decode_key, encode_key

_basic = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(), st.binary()
)
_keys = st.recursive(_basic, lambda inner: st.tuples(inner, inner), max_leaves=6)


@given(_keys)
def test_basic_keys_round_trip(key):
    assert decode_key(encode_key(key)) == key


@pytest.mark.parametrize("key", [["a"], {"a"}, {"a": 1}, object(), ("a", ["b"])])
def test_other_keys_are_refused_by_the_client(key):
    with pytest.raises(TypeError, match="queryable state key"):
        encode_key(key)


def test_code_and_containers_are_refused_by_the_server():
    code = compile("1", "<key>", "eval")
    for payload in (marshal.dumps(code), marshal.dumps(["a"]), marshal.dumps({"a": 1})):
        with pytest.raises(ValueError, match="basic value"):
            decode_key(payload)
    with pytest.raises(ValueError, match="marshal"):
        decode_key(b"\x00not marshal")
