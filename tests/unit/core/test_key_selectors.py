"""ConformedKeySelector: keys as PyFlink's keyed operators get them back from the key
type's coder, without touching the record the key came from."""

from __future__ import annotations

import pickle

from weir.common.typed_values import type_coder
from weir.common.typeinfo import Types
from weir.common.types import Row
from weir.core.key_selectors import CodedKey, ConformedKeySelector


def conformer(key_type):
    """What ``key_by(..., key_type)`` conforms its keys with."""
    return CodedKey(type_coder(key_type, strict=False, what="key"))


def test_a_row_key_gets_the_names_of_its_row_type_at_every_depth():
    key_type = Types.ROW([Types.STRING(), Types.ROW_NAMED(["n"], [Types.INT()])])
    select = ConformedKeySelector(lambda v: Row(v[0], Row(v[1])), conformer(key_type))
    key = select(("a", 1))
    assert key == Row(f0="a", f1=Row(n=1))
    assert repr(key) == "Row(f0='a', f1=Row(n=1))"


def test_the_record_keeps_its_own_rows():
    record = Row("a", Row(1))
    key_type = Types.ROW([Types.STRING(), Types.ROW([Types.INT()])])
    select = ConformedKeySelector(lambda r: r, conformer(key_type))
    assert select(record) == Row(f0="a", f1=Row(f0=1))
    assert repr(record) == "<Row('a', <Row(1)>)>"


def test_it_travels_pickled():
    select = ConformedKeySelector(len, conformer(Types.ROW([Types.INT()])))
    again = pickle.loads(pickle.dumps(select))
    assert again("abc") == 3
