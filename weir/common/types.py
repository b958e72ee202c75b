"""``Row`` and ``RowKind``: PyFlink's record type for named and positional fields."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

__all__ = ["Row", "RowKind"]


class RowKind(enum.Enum):
    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        """The short form PyFlink prints: +I, -U, +U or -D."""
        return _ROW_KIND_SHORT[self.value]


_ROW_KIND_SHORT = ("+I", "-U", "+U", "-D")


def _create_row(fields: list[str] | None, values: Any, row_kind: RowKind | None = None) -> Row:
    row = Row(*values)
    if fields is not None:
        row._fields = list(fields)
    if row_kind is not None:
        row.set_row_kind(row_kind)
    return row


class Row:
    """A row whose fields are read by position (``row[0]``), by name (``row['name']``) or as
    attributes (``row.name``), as PyFlink's ``Row``.

    Named arguments keep the order they were given in, as in PyFlink 2.x::

        >>> Row(name="Alice", age=11)
        Row(name='Alice', age=11)
        >>> Person = Row("name", "age")   # a Row "class"
        >>> Person("Alice", 11)
        Row(name='Alice', age=11)
    """

    _fields: list[str]
    _values: list[Any]
    _row_kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            msg = "Can not use both args and kwargs to create Row"
            raise ValueError(msg)
        if kwargs:
            names = list(kwargs)
            self._fields = names
            self._values = [kwargs[n] for n in names]
            self._from_dict = True
        else:
            self._values = list(args)
            self._from_dict = False
        self._row_kind = RowKind.INSERT

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The named fields as a dict; nested Rows too when ``recursive``."""
        if not hasattr(self, "_fields"):
            msg = "Cannot convert a Row class into dict"
            raise TypeError(msg)
        if not recursive:
            return dict(zip(self._fields, self, strict=False))

        def conv(obj: Any) -> Any:
            if isinstance(obj, Row):
                return obj.as_dict(True)
            if isinstance(obj, list):
                return [conv(o) for o in obj]
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            return obj

        return dict(zip(self._fields, (conv(o) for o in self), strict=False))

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        """A row of the given kind: ``Row.of_kind(RowKind.UPDATE_AFTER, 1, "x")``."""
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    def get_row_kind(self) -> RowKind:
        return self._row_kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        self._row_kind = row_kind

    def set_field_names(self, field_names: list[str]) -> None:
        self._fields = list(field_names)

    def _coded_copy(self, values: list[Any], names: list[str]) -> Row:
        """A new Row of this one's kind with ``values`` named ``names`` (shared, not
        copied), as a declared type's coder reads it back (``weir.core.type_coders``)."""
        row = object.__new__(type(self))
        state = row.__dict__
        state["_values"] = values
        state["_fields"] = names
        state["_from_dict"] = False
        state["_row_kind"] = self._row_kind
        return row

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        """The values of ``names`` in that order; a positional Row, or one named exactly
        so, returns its values as they are (PyFlink's)."""
        fields = self.__dict__.get("_fields")
        if fields is None or names == fields:
            return self._values
        missing = list(set(names).difference(fields))
        if missing:
            msg = f"Field names {missing} not exist in {fields}."
            raise Exception(msg)
        return [self._values[fields.index(name)] for name in names]

    def _is_retract_msg(self) -> bool:
        return self._row_kind in (RowKind.UPDATE_BEFORE, RowKind.DELETE)

    def _is_accumulate_msg(self) -> bool:
        return self._row_kind in (RowKind.UPDATE_AFTER, RowKind.INSERT)

    def __contains__(self, item: Any) -> bool:
        # As PyFlink: a named Row is searched by field name, a positional one by value.
        fields = getattr(self, "_fields", None)
        if fields is not None:
            return item in fields
        return item in self._values

    def __call__(self, *args: Any) -> Row:
        """A Row named by this one's values (``Row("a", "b")(1, 2)``)."""
        if len(args) > len(self):
            msg = (
                f"Can not create Row with fields {self}, expected {len(self)} values but got {args}"
            )
            raise ValueError(msg)
        return _create_row(self._values, args, self._row_kind)

    def _index_of(self, name: str) -> int:
        return self.__dict__["_fields"].index(name)

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, int | slice):
            return self._values[item]
        try:
            return self._values[self._index_of(item)]
        except (IndexError, KeyError):
            raise KeyError(item) from None
        except ValueError:
            raise ValueError(item) from None

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, int | slice):
            self._values[key] = value
            return
        try:
            self._values[self._index_of(key)] = value
        except (IndexError, KeyError):
            raise KeyError(key) from None
        except ValueError:
            raise ValueError(value) from None

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):
            raise AttributeError(item)
        try:
            return self._values[self._index_of(item)]
        except (IndexError, KeyError, ValueError):
            raise AttributeError(item) from None

    def __setattr__(self, key: str, value: Any) -> None:
        if key not in ("_fields", "_from_dict", "_row_kind", "_values"):
            raise AttributeError(key)
        self.__dict__[key] = value

    def __reduce__(self) -> tuple[Any, ...]:
        fields = self.__dict__.get("_fields")
        return _create_row, (fields, tuple(self), self._row_kind)

    def __repr__(self) -> str:
        if hasattr(self, "_fields"):
            inner = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=False))
            return f"Row({inner})"
        return "<Row({})>".format(", ".join(repr(v) for v in self))

    def __eq__(self, other: object) -> bool:
        """As PyFlink's: named Rows are equal when they hold equal values under the same
        names, in whatever order the names come; a named Row never equals a positional
        one; the kinds must match. (The hash is of the values in order, as PyFlink's, so
        two equal named Rows with their names in different orders hash differently.)"""
        if not isinstance(other, Row):
            return False
        mine = self.__dict__.get("_fields")
        theirs = other.__dict__.get("_fields")
        if (mine is None) != (theirs is None):
            return False
        if self.__class__ != other.__class__ or self._row_kind != other._row_kind:
            return False
        if mine is None or theirs is None or mine == theirs:
            return self._values == other._values
        names = sorted(mine)
        if names != sorted(theirs):
            return False
        return [self._values[mine.index(n)] for n in names] == [
            other._values[theirs.index(n)] for n in names
        ]

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)
