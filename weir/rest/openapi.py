"""The OpenAPI description of what the endpoint serves, generated from its route table
(``GET /openapi.json``): every path, method, parameter and status it answers with."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from weir.rest.routes import Route

__all__ = ["openapi_description"]

_PARAM = re.compile(r"{(\w+)}")
_ERROR_BODY = {
    "type": "object",
    "properties": {"errors": {"type": "array", "items": {"type": "string"}}},
    "required": ["errors"],
}


def _answer(route: Route) -> dict[str, Any]:
    if route.response == "text":
        return {"content": {"text/plain": {"schema": {"type": "string"}}}}
    schema = {"type": route.response}
    return {"content": {"application/json": {"schema": schema}}}


def _operation(route: Route) -> dict[str, Any]:
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAM.findall(route.path)
    ]
    errors = {
        str(status): {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Errors"}}},
        }
        for status, text in (
            ("400", "A bad request: the message says what to change."),
            ("404", "No such job, vertex, TaskManager or operation."),
            ("500", "The cluster failed to answer."),
        )
    }
    operation: dict[str, Any] = {
        "operationId": route.handler.__name__,
        "summary": route.summary,
        "parameters": params,
        "responses": {
            str(route.status): {"description": route.summary, **_answer(route)},
            **errors,
        },
    }
    if route.request_body == "json":
        operation["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    elif route.request_body == "multipart":
        operation["requestBody"] = {
            "required": True,
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"jobfile": {"type": "string", "format": "binary"}},
                        "required": ["jobfile"],
                    }
                }
            },
        }
    return operation


def openapi_description(routes: Iterable[Route], version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Weir REST API",
            "description": "Flink's REST API as the Weir master serves it.",
            "version": version,
        },
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": {"Errors": _ERROR_BODY}},
    }
