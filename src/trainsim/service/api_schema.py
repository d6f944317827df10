"""The HTTP API's bodies (requests, answers, errors as OpenAPI shows them) and the wording of
a body pydantic refuses, in the request's own names.

Split from ``service.app`` (robust57: 567 lines), which holds the routes.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainsim.config._build import suggest
from trainsim.service.store import Job

JobKind = Literal["simulate", "search", "validate", "sweep", "goodput", "plan"]


class ApiError(Exception):
    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


class ErrorBody(BaseModel):
    error: str = Field(description="One line: what is wrong and how to fix it.")
    field: str = Field(description="The request field (or limit) at fault.")


_WHY = {401: "No token, or an unknown or revoked one.",
        404: "No such job among this token's, or no such artifact.",
        409: "The job has no result (yet).",
        413: "Body over max_body_bytes.",
        422: "An invalid request or config, or work over the server's bounds.",
        429: "This token has max_active_jobs jobs queued or running.",
        503: "The config checker stopped; retry.",
        504: "No result within sync_timeout_s."}


def _errors(*codes: int, **more: Any) -> dict[int | str, Any]:
    """OpenAPI ``responses`` for the errors a route answers (``more``: its other answers)."""
    out: dict[int | str, Any] = {c: {"model": ErrorBody, "description": _WHY[c]}
                                 for c in (401, *codes)}
    return {**out, **{int(k.lstrip("_")): v for k, v in more.items()}}


_JSON_200 = {"content": {"application/json": {}}}


_CONFIG = ("A run config (model, parallel, training, cluster, ...): a mapping, or the text "
           "of a YAML file, read as the CLI reads one (framework_version: 0.10 stays 0.10).")


class JobRequest(BaseModel):
    # robust49: an unknown key was dropped in silence ("option": {...} ran without the options)
    model_config = ConfigDict(extra="forbid")

    kind: JobKind
    config: dict[str, Any] | str = Field(default_factory=dict, description=_CONFIG)
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="The CLI command's flags, with underscores.")


class SimulateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | str = Field(description=_CONFIG)
    options: dict[str, Any] = Field(default_factory=dict)


class JobCreated(BaseModel):
    id: str
    status: str


class JobView(BaseModel):
    id: str
    kind: str
    status: str
    progress: float
    phase: str | None
    result: Any = Field(description="What the CLI prints with --format json for this job.")
    error: str | None
    has_trace: bool
    has_plot: bool
    created_at: float
    started_at: float | None
    finished_at: float | None


def _view(job: Job, with_result: bool = True) -> dict[str, Any]:
    return {"id": job.id, "kind": job.kind, "status": job.status, "progress": job.progress,
            "phase": job.phase,
            "result": json.loads(job.result) if with_result and job.result else None,
            "error": job.error, "has_trace": job.has_trace, "has_plot": job.has_plot,
            "created_at": job.created_at,
            "started_at": job.started_at, "finished_at": job.finished_at}


_UNION_MEMBERS = {"dict[str,any]": "a mapping", "str": "text"}
"""How a refusal names the members of a request field that takes either (``config``: a run
config's sections, or their YAML text), by pydantic's tag of each in an error's ``loc``."""
_JSON_KINDS = {dict: "an object", list: "an array", str: "text", bool: "true/false",
               int: "a number", float: "a number", type(None): "null"}


def _union_refused(loc: list[str], first: dict[str, Any], errors: Any) -> tuple[str, str]:
    """(field, one line) for a value that none of a union field's members takes, in the
    request's words: robust56, ``config: [1]`` was "config.dict[str,any]: Input should be a
    valid dictionary", naming pydantic's tag of one member and not the YAML text it takes."""
    field = ".".join(loc)
    members = [_UNION_MEMBERS[str(e["loc"][-1])] for e in errors
               if [str(p) for p in e.get("loc", ()) if p != "body"][:-1] == loc
               and str(e["loc"][-1]) in _UNION_MEMBERS]
    what = " or ".join(dict.fromkeys(members))
    if field == "config":
        what += " (a run config's sections, or their YAML)"
    got = _JSON_KINDS.get(type(first.get("input")), type(first.get("input")).__name__)
    return field, f"{field}: expected {what}, got {got}"


def _nearest(error: dict[str, Any]) -> str:
    """' (did you mean 'x'?)' where a value is not one of a choice's (pydantic's literal or
    enum error lists them and suggests none: robust47, ``GET /api/v1/catalog/gpu``), as the
    CLI's ``catalog gpu`` says (``cli_guard._choice_hint``); else ''."""
    given, expected = error.get("input"), (error.get("ctx") or {}).get("expected")
    loc = error.get("loc") or ()
    if error.get("type") == "extra_forbidden" and len(loc) == 2 and isinstance(loc[-1], str):
        fields = ("kind", "config", "options")  # a request body's (robust49: 'option')
        if loc[-1] == "kind":  # only /simulate's body has no kind (robust56 lead 6)
            return (" (POST /api/v1/simulate runs one simulation from config and options; "
                    "a job of a kind is POST /api/v1/jobs)")
        return "" if loc[-1] in fields else suggest(loc[-1].strip().lower(), fields)
    if error.get("type") not in ("literal_error", "enum") or not isinstance(given, str) \
            or not isinstance(expected, str):
        return ""
    return suggest(given.strip().lower(), re.findall(r"'([^']*)'", expected))
