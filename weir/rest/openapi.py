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


_METRIC = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "value": {"type": "string"}},
    "required": ["id"],
}
_AGGREGATED_METRIC = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        **{name: {"type": "number"} for name in ("min", "max", "avg", "sum", "skew")},
    },
    "required": ["id"],
}
_SAVEPOINT_INFO = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "failure-cause": {
            "type": "object",
            "properties": {"class": {"type": "string"}, "stack-trace": {"type": "string"}},
        },
    },
}
# The answers whose shape is described exactly. Flink's own description gets these
# wrong: it calls its metric lists objects (Flink serves, and its clients read, bare
# arrays), and gives a savepoint operation's result as oneOf two schemas that every
# answer matches both of.
SCHEMAS: dict[str, dict[str, Any]] = {
    "Errors": _ERROR_BODY,
    "Metrics": {"type": "array", "items": _METRIC},
    "AggregatedMetrics": {"type": "array", "items": _AGGREGATED_METRIC},
    "SavepointInfo": _SAVEPOINT_INFO,
    "SavepointStatus": {
        "type": "object",
        "properties": {
            "status": {
                "type": "object",
                "properties": {"id": {"type": "string", "enum": ["IN_PROGRESS", "COMPLETED"]}},
                "required": ["id"],
            },
            "operation": {"$ref": "#/components/schemas/SavepointInfo"},
        },
        "required": ["status"],
    },
}


def _answer(route: Route) -> dict[str, Any]:
    if route.response == "text":
        return {"content": {"text/plain": {"schema": {"type": "string"}}}}
    if route.response in SCHEMAS:
        schema: dict[str, Any] = {"$ref": f"#/components/schemas/{route.response}"}
    else:
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
        "components": {"schemas": SCHEMAS},
    }
