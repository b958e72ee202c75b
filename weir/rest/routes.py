"""The REST API's route table: each handler with its method, Flink's path, and what the
OpenAPI description says of it. Handlers are plain blocking functions of the cluster
view and the request; the endpoint runs them on worker threads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError

__all__ = ["ROUTES", "RestHandlerError", "RestRequest", "RestResponse", "Route", "route"]


@dataclass(frozen=True, slots=True)
class RestRequest:
    path_params: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    """The decoded JSON body, or for a multipart upload ``{"filename", "content"}``."""
    base_url: str = ""


@dataclass(frozen=True, slots=True)
class RestResponse:
    body: Any
    status: int = 200
    content_type: str = "application/json"


Handler = Callable[[ClusterView, RestRequest], Any]


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    response: str = "object"
    """What the OpenAPI description says the 200 answer is: ``object``, ``array``,
    ``text`` or the name of one of ``weir.rest.openapi.SCHEMAS``."""
    status: int = 200
    request_body: str = ""
    """``json`` or ``multipart``; empty: none."""


ROUTES: list[Route] = []


def route(
    method: str,
    path: str,
    summary: str,
    *,
    response: str = "object",
    status: int = 200,
    request_body: str = "",
) -> Callable[[Handler], Handler]:
    """Register the decorated handler at ``method path`` (Flink's path syntax,
    ``/jobs/{jobid}``)."""

    def register(handler: Handler) -> Handler:
        ROUTES.append(Route(method, path, handler, summary, response, status, request_body))
        return handler

    return register
