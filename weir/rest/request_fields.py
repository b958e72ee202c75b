"""The fields of a REST request, read as Flink's request bodies declare them: a boolean is
JSON's ``true`` or ``false``, a string is a JSON string, a number a whole number, a list
of strings a JSON array of strings. Absent and ``null`` fields are None. Anything else is
a 400 naming the field, what came and what to send, before anything is done: read
loosely, ``{"cancel-job": "false"}`` would cancel a job.

No string may hold a NUL character: none of them (paths, program arguments, file names)
can hold one where it ends up, and the operating system would refuse it far from here.

Query parameters are text; ``query_*`` read those of Flink's that take a boolean or a
number as strictly (``true``/``false``, digits).
"""

from __future__ import annotations

import json
import re
from typing import Any

from weir.rest.errors import RestHandlerError
from weir.rest.routes import RestRequest

__all__ = [
    "boolean_field",
    "integer_field",
    "json_object",
    "query_boolean",
    "query_integer",
    "query_string",
    "string_field",
    "string_list_field",
    "without_nul",
]

_INTEGER_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")


def json_object(req: RestRequest, body_name: str) -> dict[str, Any]:
    """The request's JSON body (``{}`` when there is none); ``body_name`` is Flink's name
    of the body (``SavepointTriggerRequestBody``), for the error."""
    body = req.body if req.body is not None else {}
    if not isinstance(body, dict):
        msg = f"the request body must be a JSON object (Flink's {body_name}), got {_kind(body)}"
        raise RestHandlerError(msg, 400)
    return body


def string_field(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        msg = f'"{name}" must be a string, got {_kind(value)}: send it in double quotes'
        raise RestHandlerError(msg, 400)
    return without_nul(value, f'"{name}"')


def boolean_field(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is None or isinstance(value, bool):
        return value
    msg = f'"{name}" must be true or false, got {_kind(value)}: send true or false, unquoted'
    raise RestHandlerError(msg, 400)


def integer_field(body: dict[str, Any], name: str) -> int | None:
    """A whole number, or the text of one: Flink reads both (its dashboard sends the text
    of its input field), and an empty text as null."""
    value = body.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _is_integer_text(value):
        return int(value)
    msg = f'"{name}" must be a whole number, got {_kind(value)}: send a number such as 2'
    raise RestHandlerError(msg, 400)


def string_list_field(body: dict[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        msg = (
            f'"{name}" must be an array of strings, got {_kind(value)}: send one such as '
            '["--input", "in.txt"]'
        )
        raise RestHandlerError(msg, 400)
    return [without_nul(v, f'"{name}"') for v in value]


def query_string(req: RestRequest, name: str) -> str | None:
    """The query parameter, None when absent or empty."""
    value = req.query.get(name)
    return without_nul(value, f"query parameter {name}") if value else None


def query_boolean(req: RestRequest, name: str) -> bool | None:
    value = req.query.get(name)
    if not value:
        return None
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    msg = f"query parameter {name}={value!r} must be true or false"
    raise RestHandlerError(msg, 400)


def query_integer(req: RestRequest, name: str) -> int | None:
    value = req.query.get(name)
    if not value:
        return None
    if _is_integer_text(value):
        return int(value)
    msg = f"query parameter {name}={value!r} must be a whole number, such as 2"
    raise RestHandlerError(msg, 400)


def without_nul(text: str, what: str) -> str:
    """``text``, refused (400) if it holds a NUL character; ``what`` names it."""
    at = text.find("\x00")
    if at >= 0:
        msg = (
            f"{what} holds a NUL character (at position {at}), which no path, argument or "
            "file name can hold: send it without"
        )
        raise RestHandlerError(msg, 400)
    return text


def _is_integer_text(text: str) -> bool:
    return _INTEGER_TEXT.fullmatch(text) is not None


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: ``the string "false"``, ``the number 12345``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = json.dumps(value)
        if len(shown) > 60:
            shown = shown[:56] + '..."'
        return f"the string {shown}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "an array"
    return "an object"
