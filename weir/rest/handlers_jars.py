"""The dashboard's "Submit New Job" page over Flink's jar endpoints: a Python job file is
uploaded to ``/jars/upload``, listed by ``/jars``, planned by ``/jars/{id}/plan`` and
submitted by ``/jars/{id}/run`` with its parallelism, arguments and savepoint, as
``weir run -d`` would. A file that is not a ``.py`` file is refused with Flink's error
shape, saying so."""

from __future__ import annotations

import shlex
from typing import Any

from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError
from weir.rest.job_file_submission import JobFileRun, plan_job_file, run_job_file
from weir.rest.routes import RestRequest, route


@route("GET", "/jars", "The uploaded job files (Python files, where Flink has jars).")
def get_jars(view: ClusterView, req: RestRequest) -> Any:
    return {
        "address": req.base_url,
        "files": [
            {
                "id": f.id,
                "name": f.name,
                "uploaded": f.uploaded_ms,
                "entry": [{"name": f.name, "description": None}],
            }
            for f in view.uploads.list()
        ],
    }


@route(
    "POST",
    "/jars/upload",
    "Upload a Python job file (multipart field 'jarfile'); only .py files are accepted.",
    request_body="multipart",
)
def post_jar_upload(view: ClusterView, req: RestRequest) -> Any:
    upload = req.body
    if not isinstance(upload, dict) or "content" not in upload:
        msg = "POST /jars/upload takes a multipart/form-data body with the job file as 'jarfile'"
        raise RestHandlerError(msg, 400)
    name = str(upload.get("filename") or "")
    if not name.endswith(".py"):
        msg = (
            f"{name or 'the file'} is not a Python job file: this cluster runs Python jobs, "
            "so only .py files are accepted (a job file that calls execute(), as for weir run)"
        )
        raise RestHandlerError(msg, 400)
    stored = view.uploads.add(name, upload["content"])
    return {"filename": str(stored.path), "status": "success"}


@route("DELETE", "/jars/{jarid}", "Delete an uploaded job file.")
def delete_jar(view: ClusterView, req: RestRequest) -> Any:
    view.uploads.delete(req.path_params["jarid"])
    return {}


def _body(req: RestRequest) -> dict[str, Any]:
    body = req.body if req.body is not None else {}
    if not isinstance(body, dict):
        msg = "the request body must be a JSON object (Flink's JarRunRequestBody)"
        raise RestHandlerError(msg, 400)
    return body


def _value(req: RestRequest, body: dict[str, Any], field: str, *params: str) -> Any:
    """A field of the body, else the first query parameter given (Flink reads both)."""
    if body.get(field) not in (None, ""):
        return body[field]
    return next((req.query[p] for p in params if req.query.get(p)), None)


def _job_file_run(req: RestRequest) -> JobFileRun:
    body = _body(req)
    args_list = body.get("programArgsList")
    if args_list:
        args = [str(a) for a in args_list]
    elif not body.get("programArgs") and req.query.get("programArg"):
        args = [a for a in req.query["programArg"].split(",") if a]  # a list, as Flink's
    else:
        text = _value(req, body, "programArgs", "program-args") or ""
        try:
            args = shlex.split(str(text))
        except ValueError as exc:
            msg = f"the program arguments {text!r} cannot be split: {exc}"
            raise RestHandlerError(msg, 400) from None
    parallelism = _value(req, body, "parallelism", "parallelism")
    try:
        parallelism_value = int(parallelism) if parallelism not in (None, "") else None
    except ValueError:
        msg = f"parallelism must be a positive number, got {parallelism!r}"
        raise RestHandlerError(msg, 400) from None
    if parallelism_value is not None and parallelism_value <= 0:
        parallelism_value = None  # Flink: 0 or less means the job's own default
    allow = _value(req, body, "allowNonRestoredState", "allowNonRestoredState")
    return JobFileRun(
        args=args,
        parallelism=parallelism_value,
        savepoint_path=str(_value(req, body, "savepointPath", "savepointPath") or ""),
        allow_non_restored_state=str(allow).lower() == "true",
    )


@route(
    "POST",
    "/jars/{jarid}/run",
    "Submit the job of an uploaded job file ({programArgs, parallelism, savepointPath, "
    "allowNonRestoredState}); answers with its job id.",
    request_body="json",
)
def post_jar_run(view: ClusterView, req: RestRequest) -> Any:
    stored = view.uploads.get(req.path_params["jarid"])
    job_id = run_job_file(view.dispatcher.address, stored.path, _job_file_run(req))
    return {"jobid": job_id}


def _plan(view: ClusterView, req: RestRequest) -> Any:
    stored = view.uploads.get(req.path_params["jarid"])
    return {"plan": plan_job_file(stored.path, _job_file_run(req))}


@route("GET", "/jars/{jarid}/plan", "The plan of an uploaded job file's job, not run.")
def get_jar_plan(view: ClusterView, req: RestRequest) -> Any:
    return _plan(view, req)


@route(
    "POST",
    "/jars/{jarid}/plan",
    "The plan of an uploaded job file's job, not run.",
    request_body="json",
)
def post_jar_plan(view: ClusterView, req: RestRequest) -> Any:
    return _plan(view, req)
