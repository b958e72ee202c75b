"""``ConfigOption``: a configuration key with its default, parser and description; the
registry ``OPTIONS`` that every key made with ``_option`` joins; the parsers keys share."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from weir.core.errors import ConfigurationError

T = TypeVar("T")


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    msg = f"expected true or false, got {text!r}"
    raise ValueError(msg)


_DURATION_UNITS_MS = {
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "m": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def parse_duration_ms(text: str) -> int:
    """Flink's duration syntax: ``100 ms``, ``10s``, ``1 min``; a bare number is milliseconds."""
    stripped = str(text).strip().lower()
    digits = ""
    for ch in stripped:
        if ch.isdigit() or (ch == "-" and not digits):
            digits += ch
        else:
            break
    unit = stripped[len(digits) :].strip() or "ms"
    if not digits or digits == "-" or unit not in _DURATION_UNITS_MS:
        msg = f"expected a duration such as '100 ms', '10 s' or '1 min', got {text!r}"
        raise ValueError(msg)
    return int(digits) * _DURATION_UNITS_MS[unit]


def parse_memory_bytes(text: str) -> int:
    stripped = str(text).strip().lower().replace(" ", "")
    units = {
        "": 1,
        "b": 1,
        "k": 1 << 10,
        "kb": 1 << 10,
        "m": 1 << 20,
        "mb": 1 << 20,
        "g": 1 << 30,
        "gb": 1 << 30,
        # Kubernetes' quantities (2048Mi), as the Helm chart's values write sizes.
        "ki": 1 << 10,
        "mi": 1 << 20,
        "gi": 1 << 30,
    }
    number = stripped.rstrip("kmgbi")
    unit = stripped[len(number) :]
    if not number.isdigit() or unit not in units:
        msg = f"expected a size such as '32 kb' or '1 mb', got {text!r}"
        raise ValueError(msg)
    return int(number) * units[unit]


@dataclass(frozen=True, slots=True)
class ConfigOption(Generic[T]):
    key: str
    default: T
    parse: Callable[[str], T]
    description: str
    choices: tuple[str, ...] = ()
    """The values admitted, when only some are; an option whose default is ``""`` (unset)
    also admits ``""``, which is not one of its choices."""

    def from_string(self, text: str) -> T:
        value = str(text).strip().lower()
        if self.choices and value not in self.choices and not (value == "" == self.default):
            unset = "; or leave it unset" if self.default == "" else ""
            msg = (
                f"bad value {text!r} for configuration key {self.key!r}: "
                f"expected one of {', '.join(self.choices)}{unset}"
            )
            raise ConfigurationError(msg)
        try:
            return self.parse(str(text))
        except (ValueError, TypeError) as exc:
            msg = f"bad value for configuration key {self.key!r}: {exc}"
            raise ConfigurationError(msg) from exc


OPTIONS: dict[str, ConfigOption[Any]] = {}


def _option(
    key: str, default: T, parse: Callable[[str], T], description: str, choices: tuple[str, ...] = ()
) -> ConfigOption[T]:
    if "" in choices:
        msg = f"{key}: an empty choice is meant by a default of '' (unset), not listed"
        raise ValueError(msg)
    opt = ConfigOption(key, default, parse, description, choices)
    OPTIONS[key] = opt
    return opt


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"expected a positive integer, got {text!r}"
        raise ValueError(msg)
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:  # gRPC would take 99999 modulo 65536, another port
        msg = f"expected a port from 0 to 65535 (0 = any free port), got {text!r}"
        raise ValueError(msg)
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN too
        msg = f"expected a number of 0 or more, got {text!r}"
        raise ValueError(msg)
    return value


def _positive_duration_ms(text: str) -> int:
    value = parse_duration_ms(text)
    if value <= 0:
        msg = f"expected a duration longer than 0 ms, got {text!r}"
        raise ValueError(msg)
    return value


def _non_negative_duration_ms(text: str) -> int:
    value = parse_duration_ms(text)
    if value < 0:
        msg = f"expected a duration of 0 ms or more, got {text!r}"
        raise ValueError(msg)
    return value


_SPARK_MASTER_FORMS = (
    re.compile(r"local(\[(\*|[1-9]\d*)(\s*,\s*[1-9]\d*)?\])?"),
    re.compile(r"local-cluster\[[1-9]\d*,\s*[1-9]\d*,\s*[1-9]\d*\]"),
    re.compile(r"spark://[^\s:/,]+:\d+(,[^\s:/,]+:\d+)*"),
    re.compile(r"yarn"),
    re.compile(r"k8s://\S+"),
)


def _spark_master(text: str) -> str:
    """A master URL Spark accepts; a bad one would otherwise only end Spark's JVM at start
    (``JAVA_GATEWAY_EXITED``) without saying which setting it disliked."""
    value = text.strip()
    if not any(form.fullmatch(value) for form in _SPARK_MASTER_FORMS):
        msg = (
            f"expected local, local[N], local[*], spark://host:port, yarn or "
            f"k8s://https://host:port, got {text!r}"
        )
        raise ValueError(msg)
    return value
