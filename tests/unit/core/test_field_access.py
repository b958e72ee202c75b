"""field_of: only functions that return one field of their record are read as columns."""

from __future__ import annotations

import pytest

from weir.core.field_access import field_of

OFFSET = 1


class ByAuction:
    def get_key(self, value):
        return value[1]


class BidTime:
    def extract_timestamp(self, value, record_timestamp):
        return value[3]


def by_name(record):
    return record.auction


@pytest.mark.parametrize(
    ("function", "field"),
    [
        (lambda r: r[0], 0),
        (lambda r: r[-1], -1),
        (lambda r: r["auction"], "auction"),
        (lambda r: r.price, "price"),
        (ByAuction(), 1),
        (BidTime(), 3),
        (by_name, "auction"),
    ],
)
def test_a_function_returning_one_field_is_read_as_that_field(function, field):
    assert field_of(function) == field


@pytest.mark.parametrize(
    "function",
    [
        lambda r: r[0] + 1,
        lambda r: r[OFFSET],  # a global: it may change
        lambda r, default=1: r[0],
        lambda r: (r[0],),
        lambda r: r[True],
        lambda r: r,
        lambda r: r[0][1],
        lambda r: r.price.amount,
        len,
        str.upper,
    ],
)
def test_anything_more_is_called_per_record(function):
    assert field_of(function) is None


def test_a_closure_is_never_a_field():
    index = 2
    assert field_of(lambda r: r[index]) is None
