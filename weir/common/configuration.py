"""``Configuration``: PyFlink's string-keyed settings (``set_string``, ``get_integer``, ...)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Any

import yaml

from weir.core.sensitive_keys import HIDDEN_VALUE, is_sensitive

__all__ = ["Configuration"]


def _java_hash(key: str) -> int:
    """``HashMap.hash(key)``: Java's ``String.hashCode`` spread by its high bits."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _hash_map_order(keys: Iterable[str], capacity: int) -> list[str]:
    """The order a ``java.util.HashMap`` of ``capacity`` buckets iterates ``keys`` put into
    it in this order: by bucket, then in the order put."""
    return sorted(keys, key=lambda k: _java_hash(k) & (capacity - 1))


def _grown_capacity(size: int) -> int:
    """The table size of a ``new HashMap<>()`` holding ``size`` entries."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def _presized_capacity(size: int) -> int:
    """The table size of Flink's ``CollectionUtil.newHashMapWithExpectedSize(size)``."""
    wanted = size + 1 if size <= 2 else math.ceil(size / 0.75)
    return 1 << max(0, wanted - 1).bit_length()


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Configuration:
    """A map of Flink configuration keys to values, kept as strings as Flink's Configuration
    does, so ``set_integer("k", 3)`` then ``get_string("k", "")`` gives ``"3"``.

    ::

        >>> config = Configuration()
        >>> config.set_integer("parallelism.default", 4)
        >>> config.get_integer("parallelism.default", 1)
        4
    """

    def __init__(self, other: Configuration | None = None) -> None:
        self._entries: dict[str, str] = dict(other._entries) if other is not None else {}

    def get_string(self, key: str, default_value: str) -> str:
        return self._entries.get(key, default_value)

    def set_string(self, key: str, value: str) -> Configuration:
        self._entries[key] = _as_text(value)
        return self

    @staticmethod
    def parse_list_value(value: str) -> list[Any]:
        """A list option's value: a YAML flow list (``[a, b]``) or ``a;b``."""
        if not value:
            return []
        parsed = yaml.safe_load(value)
        if isinstance(parsed, list):
            return parsed
        return value.split(";")

    def get_integer(self, key: str, default_value: int) -> int:
        text = self._entries.get(key)
        if text is None:
            return default_value
        try:
            return int(text.strip())
        except ValueError:
            msg = f"configuration key {key!r} holds {text!r}, which is not an integer"
            raise ValueError(msg) from None

    def set_integer(self, key: str, value: int) -> Configuration:
        self._entries[key] = str(int(value))
        return self

    def get_boolean(self, key: str, default_value: bool) -> bool:
        text = self._entries.get(key)
        if text is None:
            return default_value
        lowered = text.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        msg = f"configuration key {key!r} holds {text!r}, which is not true or false"
        raise ValueError(msg)

    def set_boolean(self, key: str, value: bool) -> Configuration:
        self._entries[key] = "true" if value else "false"
        return self

    def get_float(self, key: str, default_value: float) -> float:
        text = self._entries.get(key)
        if text is None:
            return default_value
        try:
            return float(text.strip())
        except ValueError:
            msg = f"configuration key {key!r} holds {text!r}, which is not a number"
            raise ValueError(msg) from None

    def set_float(self, key: str, value: float) -> Configuration:
        self._entries[key] = str(float(value))
        return self

    def get_bytearray(self, key: str, default_value: bytes) -> bytes:
        text = self._entries.get(key)
        return default_value if text is None else bytes.fromhex(text)

    def set_bytearray(self, key: str, value: bytes) -> Configuration:
        self._entries[key] = bytes(value).hex()
        return self

    def key_set(self) -> set[str]:
        return set(self._entries)

    def keys(self) -> set[str]:
        return self.key_set()

    def add_all_to_dict(self, target_dict: dict[str, Any]) -> None:
        target_dict.update(self._entries)

    def add_all(self, other: Configuration, prefix: str | None = None) -> Configuration:
        for key, value in other._entries.items():
            self._entries[(prefix or "") + key] = value
        return self

    def contains_key(self, key: str) -> bool:
        return key in self._entries

    def _java_order(self) -> list[str]:
        """The keys in the order Flink's Configuration (a HashMap) holds them."""
        return _hash_map_order(self._entries, _grown_capacity(len(self._entries)))

    def to_dict(self) -> dict[str, str]:
        """The settings as strings, in the order PyFlink's (a copy of a Java HashMap) has."""
        order = _hash_map_order(self._java_order(), _presized_capacity(len(self._entries)))
        return {key: self._entries[key] for key in order}

    def remove_config(self, key: str) -> bool:
        return self._entries.pop(key, None) is not None

    def remove_key(self, key: str) -> bool:
        return self.remove_config(key)

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Configuration) and other._entries == self._entries

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._entries.items())))

    def __repr__(self) -> str:
        return f"Configuration({self._entries!r})"

    def __str__(self) -> str:
        """As Flink's ``Configuration.toString()``: ``{key=value, ...}``, values of
        sensitive keys (passwords, secrets, tokens) hidden."""
        # Copied twice through new HashMaps of the same size: the order of confData.
        shown = [
            f"{key}={HIDDEN_VALUE if is_sensitive(key) else self._entries[key]}"
            for key in self._java_order()
        ]
        return "{" + ", ".join(shown) + "}"
