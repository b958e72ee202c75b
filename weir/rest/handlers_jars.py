"""The dashboard's "Submit New Job" page over Flink's jar endpoints: a Python job file is
uploaded to ``/jars/upload``, listed by ``/jars``, planned by ``/jars/{id}/plan`` and
submitted by ``/jars/{id}/run`` with its parallelism, arguments and savepoint, as
``weir run -d`` would. A file that is not a ``.py`` file is refused with Flink's error
shape, saying so. The run's fields are read strictly (``weir.rest.request_fields``)."""

from __future__ import annotations

import shlex
from typing import Any

from weir.rest.cluster_view import ClusterView
from weir.rest.errors import RestHandlerError
from weir.rest.job_file_submission import JobFileRun, plan_job_file, run_job_file
from weir.rest.request_fields import (
    boolean_field,
    integer_field,
    json_object,
    query_boolean,
    query_integer,
    query_string,
    string_field,
    string_list_field,
    without_nul,
)
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
    name = without_nul(str(upload.get("filename") or ""), "the file name")
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


def _job_file_run(req: RestRequest) -> JobFileRun:
    """Flink's JarRunRequestBody, each field read strictly; a field absent from the body is
    taken from the query parameter Flink reads it from too."""
    body = json_object(req, "JarRunRequestBody")
    args_list = string_list_field(body, "programArgsList")
    program_args = string_field(body, "programArgs")
    query_args = query_string(req, "programArg")
    if args_list:
        args = args_list
    elif not program_args and query_args:
        args = [a for a in query_args.split(",") if a]  # a list, as Flink's
    else:
        text = program_args or query_string(req, "program-args") or ""
        try:
            args = shlex.split(text)
        except ValueError as exc:
            msg = f"the program arguments {text!r} cannot be split: {exc}"
            raise RestHandlerError(msg, 400) from None
    parallelism = integer_field(body, "parallelism")
    if parallelism is None:
        parallelism = query_integer(req, "parallelism")
    if parallelism is not None and parallelism <= 0:
        parallelism = None  # Flink: 0 or less means the job's own default
    allow = boolean_field(body, "allowNonRestoredState")
    if allow is None:
        allow = query_boolean(req, "allowNonRestoredState")
    savepoint = string_field(body, "savepointPath") or query_string(req, "savepointPath")
    return JobFileRun(
        args=args,
        parallelism=parallelism,
        savepoint_path=savepoint or "",
        allow_non_restored_state=allow is True,
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
