"""Savepoint REST handlers: ``POST /jobs/{jobid}/savepoints`` and ``POST
/jobs/{jobid}/stop`` answer at once with a trigger id (Flink's asynchronous operations);
``GET /jobs/{jobid}/savepoints/{triggerid}`` tells where the savepoint is.

They go through a ``SavepointTrigger`` (``weir.rest.savepoint_trigger``).
"""

from __future__ import annotations

from typing import Any

from weir.core.ids import parse_job_id
from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError
from weir.rest.routes import RestRequest, RestResponse, route


def _body(req: RestRequest) -> dict[str, Any]:
    body = req.body if req.body is not None else {}
    if not isinstance(body, dict):
        msg = "the request body must be a JSON object"
        raise RestHandlerError(msg, 400)
    return body


@route(
    "POST",
    "/jobs/{jobid}/savepoints",
    "Trigger a savepoint ({target-directory, cancel-job}); answers with its request id.",
    status=202,
    request_body="json",
)
def post_savepoint(view: ClusterView, req: RestRequest) -> Any:
    job_id = parse_job_id(req.path_params["jobid"])
    body = _body(req)
    trigger_id = view.savepoints.trigger(
        job_id,
        body.get("target-directory"),
        cancel_job=bool(body.get("cancel-job", False)),
    )
    return RestResponse({"request-id": trigger_id}, status=202)


@route(
    "POST",
    "/jobs/{jobid}/stop",
    "Stop the job with a savepoint ({targetDirectory, drain}); answers with its request id.",
    status=202,
    request_body="json",
)
def post_stop(view: ClusterView, req: RestRequest) -> Any:
    job_id = parse_job_id(req.path_params["jobid"])
    body = _body(req)
    trigger_id = view.savepoints.trigger(
        job_id,
        body.get("targetDirectory"),
        stop=True,
        drain=bool(body.get("drain", False)),
    )
    return RestResponse({"request-id": trigger_id}, status=202)


@route(
    "GET",
    "/jobs/{jobid}/savepoints/{triggerid}",
    "Where a triggered savepoint is: IN_PROGRESS or COMPLETED with its location or failure.",
    response="SavepointStatus",
)
def get_savepoint(view: ClusterView, req: RestRequest) -> Any:
    job_id = parse_job_id(req.path_params["jobid"])
    operation = view.savepoints.status(job_id, req.path_params["triggerid"])
    if operation.status != "COMPLETED":
        return {"status": {"id": "IN_PROGRESS"}}
    result: dict[str, Any] = (
        {"failure-cause": {"class": "SavepointError", "stack-trace": operation.failure}}
        if operation.failure
        else {"location": operation.location}
    )
    return {"status": {"id": "COMPLETED"}, "operation": result}
