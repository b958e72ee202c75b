"""Key selectors whose keys are what PyFlink's keyed operators receive.

PyFlink computes a key, encodes it with the declared key type's coder and hands the keyed
operator the decoded key: a Row of a ROW key type comes back with the type's field names
(``Row(f0='a', f1=1)`` for a positional ``Row('a', 1)`` of ``Types.ROW([...])``), at every
depth. ``ConformedKeySelector`` does the same to the keys of a selector, so that
``ctx.get_current_key()`` and the keys of keyed state are PyFlink's. It lives here rather
than beside the types so that a TaskManager unpickles it without the user API (see
``weir.core.typed_values``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["CodedKey", "ConformedKeySelector"]


class CodedKey:
    """A key as the key type's coder gives it back (a ``weir.core.type_coders``
    ``DeclaredTypeCoder`` made with ``strict=False``): a key that does not fit the type is
    left as it is."""

    __slots__ = ("coder",)

    def __init__(self, coder: Any) -> None:
        self.coder = coder

    def __call__(self, key: Any) -> Any:
        return self.coder.code(key, "key_by")


class ConformedKeySelector:
    """``selector`` followed by ``conform`` (``CodedKey``). The key is copied first: a
    selector may return a part of the record, which the operator's function sees as it
    was."""

    __slots__ = ("conform", "selector")

    def __init__(self, selector: Callable[[Any], Any], conform: Callable[[Any], Any]) -> None:
        self.selector = selector
        self.conform = conform

    def __call__(self, value: Any) -> Any:
        return self.conform(copy.deepcopy(self.selector(value)))

    def conform_key(self, key: Any) -> Any:
        """A key the selector returned before its keys were conformed (restored state),
        as the selector returns it now."""
        return self.conform(copy.deepcopy(key))
