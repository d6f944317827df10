"""The HTTP API (FastAPI) over the job store, and the web UI's static files.

Every ``/api/v1`` route but health needs ``Authorization: Bearer <token>``. Errors are JSON
``{"error": "<one line>", "field": "<the request field at fault>"}``.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from trainsim.engine.loop import freeze_collector, thaw_collector
from trainsim.service import catalog as service_catalog
from trainsim.service import jobs
from trainsim.service.api_schema import (
    _JSON_200,
    _UNION_MEMBERS,
    ApiError,
    JobCreated,
    JobRequest,
    JobView,
    SimulateRequest,
    _errors,
    _nearest,
    _union_refused,
    _view,
)
from trainsim.service.asgi import _BodyError, _BodyLimit, _start_checker, _Waiters, _WrittenRoute
from trainsim.service.settings import Settings
from trainsim.service.store import Job, Store
from trainsim.service.worker import WorkerPool

STATIC = Path(__file__).parent / "static"
JobId = Annotated[str, PathParam(pattern="^[0-9a-f]{32}$", description=(
    "A job's id: 32 hex digits, as the submitting call answered it."))]
"""A job id in a path: anything else (a '/', a dot segment) is a 422 naming it, not a routing
miss answered with a status the schema does not list."""
API = "/api/v1"


def create_app(settings: Settings | None = None, start_workers: bool = True) -> FastAPI:
    """The API and UI over ``settings.db_url``; workers start with the app's lifespan."""
    settings = settings or Settings()
    store = Store(settings.db_url)
    pool = WorkerPool(settings, store)
    waiters = _Waiters()
    pool.on_finished(waiters.notify)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        waiters.loop = asyncio.get_running_loop()
        await _start_db_threads()
        if settings.checkers > 0:  # start and warm the checkers now, not on a first request
            await db(_checker_pool)
            await waiters.loop.run_in_executor(checkers[0], jobs.problem, "simulate",
                                               {"model": "llama3-8b"}, {}, settings)
        if start_workers:
            await db(pool.start)
        # A full collection walks every object the imports made (~90,000: FastAPI, pydantic,
        # SQLAlchemy); under load it stopped the event loop for 85-360 ms, the slow health
        # checks of the load test. Frozen, they are never walked again.
        # Through engine.loop's count of freezes, so runs_shared knows it in O(1); the last app
        # of this process to stop (tests run several) unfreezes.
        gc.collect()
        freeze_collector()
        try:
            yield
        finally:
            thaw_collector()
            for ex in checkers:
                ex.shutdown(wait=False, cancel_futures=True)
            if start_workers:
                pool.stop()
            db_pool.shutdown(wait=False, cancel_futures=True)
            store.close()

    app = FastAPI(title="trainsim", version="1", lifespan=lifespan,
                  openapi_url=f"{API}/openapi.json", docs_url="/docs", redoc_url=None,
                  description="Simulate LLM training runs: the trainsim CLI as a service.")
    app.router.route_class = _WrittenRoute
    app.state.store, app.state.pool, app.state.settings = store, pool, settings
    app.add_middleware(_BodyLimit, max_bytes=settings.limits.max_body_bytes)
    bearer = HTTPBearer(auto_error=False)
    known: dict[str, tuple[str, float]] = {}  # token -> (its id, when to look it up again)

    # Database calls block: they run on a few threads started with the app, never on the event
    # loop, and never on threads started on demand (a thread start waited 50-60 ms for the CPU
    # under load). Few threads also means few contend with the event loop for the GIL.
    db_pool = ThreadPoolExecutor(settings.db_threads, thread_name_prefix="trainsim-db")

    async def db(fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(db_pool, fn, *args)

    async def _start_db_threads() -> None:
        ready = threading.Barrier(settings.db_threads)
        await asyncio.gather(*(asyncio.wrap_future(db_pool.submit(ready.wait, 10.0))
                               for _ in range(settings.db_threads)))

    @app.exception_handler(ApiError)
    async def _api_error(_r: Request, exc: ApiError) -> JSONResponse:
        # one line, even when it quotes a value with a line break in it
        message = exc.message.replace("\r", "\\r").replace("\n", "\\n")
        return JSONResponse({"error": message, "field": exc.field}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("body",), "msg": "invalid"}
        loc = [str(p) for p in first.get("loc", ()) if p != "body"] or ["body"]
        field = ".".join(loc)
        message = f"{field}: {first.get('msg', 'invalid')}{_nearest(first)}"
        if len(loc) > 1 and loc[-1] in _UNION_MEMBERS:  # pydantic's tag of a union's member
            field, message = _union_refused(loc[:-1], first, exc.errors())
        return JSONResponse({"error": message.replace("\n", "\\n"), "field": field},
                            status_code=422)

    @app.exception_handler(_BodyError)
    async def _body(_r: Request, exc: _BodyError) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail).replace("\n", "\\n"), "field": "body"},
                            status_code=exc.status_code)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_r: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail), "field": "path"},
                            status_code=exc.status_code)

    async def caller(creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> str:  # noqa: B008
        if creds is None or creds.scheme.lower() != "bearer":
            raise ApiError(401, "authorization", "missing 'Authorization: Bearer <token>' "
                           "(create one with: trainsim token create NAME)")
        token_id, until = known.get(creds.credentials, (None, 0.0))
        if time.monotonic() >= until:  # a revoked token is refused within token_cache_s
            token_id = await db(store.token_id, creds.credentials)
            known.pop(creds.credentials, None)
            if token_id is not None:
                if len(known) > 10000:
                    known.clear()
                known[creds.credentials] = (token_id, time.monotonic() + settings.token_cache_s)
        if token_id is None:
            raise ApiError(401, "authorization", "unknown or revoked token")
        return token_id

    # the count and the insert of a submit in one transaction under the database's lock
    # (``Store.create_job_within``): concurrent submits of a token each counted the others' jobs
    # as not yet there and all went in (robust57: six at once against max_active_jobs 3 left
    # 4-5 queued); this process's lock only spares its threads SQLite's busy wait
    enqueueing = threading.Lock()

    def _enqueue(token_id: str, kind: str, config: Any, options: Any) -> str:
        limit = settings.limits.max_active_jobs
        with enqueueing:
            job_id = store.create_job_within(token_id, kind,
                                             {"config": config, "options": options}, limit)
        if job_id is None:
            raise ApiError(429, "max_active_jobs", f"this token already has {limit} jobs "
                           "queued or running (max_active_jobs); wait for one to finish")
        pool.notify()
        return job_id

    # Checking a config is CPU work: done in checker processes (settings.checkers), it leaves
    # the GIL of this process to the event loop, so health checks stay fast under load.
    checkers: list[Any] = []
    in_threads = asyncio.Semaphore(2)

    def _checker_pool() -> None:
        if not checkers:
            ctx = multiprocessing.get_context("spawn")
            checkers.append(ProcessPoolExecutor(settings.checkers, mp_context=ctx,
                                                initializer=_start_checker,
                                                initargs=(os.getpid(),)))

    async def submit(token_id: str, kind: str, config: Any, options: Any) -> str:
        if isinstance(config, str):  # YAML text (the web UI's editor): the CLI's loader
            try:
                config = await run_in_threadpool(jobs.read_config, config)
            except jobs.RequestError as exc:
                raise ApiError(exc.status, exc.field, str(exc)) from None
        args = (kind, config, options, settings)
        if settings.checkers > 0:
            if not checkers:
                await db(_checker_pool)
            loop = asyncio.get_running_loop()
            try:
                bad = await loop.run_in_executor(checkers[0], jobs.problem, *args)
            except BrokenProcessPool:  # a checker died (e.g. out of memory): start afresh
                checkers.pop().shutdown(wait=False, cancel_futures=True)
                raise ApiError(503, "config", "the config checker stopped; retry") from None
        else:
            async with in_threads:
                bad = await run_in_threadpool(jobs.problem, *args)
        if bad is not None:
            raise ApiError(*bad)
        return await db(_enqueue, token_id, kind, config, options)

    def _own(job_id: str, token_id: str) -> Job:
        job = store.get_job(job_id, token_id)
        if job is None:
            raise ApiError(404, "id", f"no job {job_id}")
        return job

    def _artifact(job_id: str, token_id: str, what: str, submit: str) -> Any:
        """A caller's job's stored ``what`` ("trace" or "plot"), or a 404 saying how to get
        one."""
        job = _own(job_id, token_id)
        data = getattr(store, what)(job_id, token_id) if getattr(job, f"has_{what}") else None
        if data is None:
            raise ApiError(404, what, f"job {job_id} has no {what} (submit {submit})")
        return data

    @app.get(f"{API}/health", tags=["service"])
    async def health() -> dict[str, str]:
        """Liveness: no token needed."""
        return {"status": "ok"}

    @app.post(f"{API}/jobs", status_code=202, response_model=JobCreated, tags=["jobs"],
              responses=_errors(413, 422, 429, 503))
    async def create_job(body: JobRequest, token_id: str = Depends(caller)) -> dict[str, str]:
        """Queue a job; it is stored before this answers, so it survives a server restart."""
        job_id = await submit(token_id, body.kind, body.config, body.options)
        return {"id": job_id, "status": "queued"}

    @app.get(f"{API}/jobs", response_model=list[JobView], tags=["jobs"],
             responses=_errors(422))
    async def list_jobs(limit: int = Query(100, ge=1, le=1000),
                        offset: int = Query(0, ge=0, le=2**62),
                        token_id: str = Depends(caller)) -> Any:
        """The caller's jobs, newest first (results left out: read them one job at a time)."""
        jobs_ = await db(store.list_jobs, token_id, limit, offset)
        return [_view(j, with_result=False) for j in jobs_]

    @app.get(f"{API}/jobs/{{job_id}}", response_model=JobView, tags=["jobs"],
             responses=_errors(404, 422))
    async def get_job(job_id: JobId, wait_s: float = Query(0.0, ge=0.0, le=60.0, description=(
            "Answer once the job has ended, or after this many seconds (long poll).")),
            token_id: str = Depends(caller)) -> Any:
        job = await waiters.until_ended(job_id, lambda: db(_own, job_id, token_id), wait_s)
        return JSONResponse(_view(job))  # polled often: no re-validation

    @app.get(f"{API}/jobs/{{job_id}}/result", tags=["jobs"],
             responses=_errors(404, 409, 422, _200=_JSON_200))
    async def get_result(job_id: JobId, token_id: str = Depends(caller)) -> Response:
        """The result as the CLI prints it with --format json, byte for byte."""
        job = await db(_own, job_id, token_id)
        if job.result is None:
            raise ApiError(409, "status", f"job {job_id} is {job.status}: no result")
        return Response(job.result, media_type="application/json")

    @app.delete(f"{API}/jobs/{{job_id}}", response_model=JobView, tags=["jobs"],
                responses=_errors(404, 422))
    async def cancel_job(job_id: JobId, token_id: str = Depends(caller)) -> Any:
        """Cancel a queued or running job; a finished job is left as it is."""
        await db(_own, job_id, token_id)
        return _view(await db(store.cancel, job_id, token_id) or await db(_own, job_id, token_id))

    @app.get(f"{API}/jobs/{{job_id}}/trace", tags=["jobs"],
             responses=_errors(404, 422, _200=_JSON_200))
    async def get_trace(job_id: JobId, token_id: str = Depends(caller)) -> Response:
        """The Chrome/Perfetto trace of a simulate job run with options.trace = true."""
        trace = await db(_artifact, job_id, token_id, "trace",
                         "a simulate job with options.trace = true")
        return Response(trace, media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="trainsim-{job_id}-trace.json"'})

    @app.get(f"{API}/jobs/{{job_id}}/plot", tags=["jobs"],
             responses=_errors(404, 422, _200={"content": {"image/png": {}}}))
    async def get_plot(job_id: JobId, token_id: str = Depends(caller)) -> Response:
        """The PNG the CLI writes with --plot (simulate, sweep, search, goodput and one-file
        validate jobs with options.plot)."""
        png = await db(_artifact, job_id, token_id, "plot",
                       "a job with options.plot = true")
        return Response(png, media_type="image/png")

    @app.api_route(f"{API}/jobs/{{rest:path}}", methods=["GET", "DELETE"],
                   include_in_schema=False)
    async def not_a_job_path(rest: str, token_id: str = Depends(caller)) -> Any:
        """What no job route matched: an id that is no path segment ('/', '%2F'), or an
        unknown artifact; answered as the documented 422 naming the id, not a routing miss
        (405 for DELETE, or a slash-redirect to the job list for GET)."""
        raise ApiError(422, "job_id", f"'{rest}' is not a job id (32 hex digits) and artifact")

    @app.post(f"{API}/simulate", tags=["jobs"],
              responses=_errors(413, 422, 429, 503, 504, _200=_JSON_200))
    async def simulate_now(body: SimulateRequest, token_id: str = Depends(caller)) -> Response:
        """One simulation, answered when done (504 past the server's sync_timeout_s)."""
        job_id = await submit(token_id, "simulate", body.config, body.options)
        job = await waiters.until_ended(job_id, lambda: db(_own, job_id, token_id),
                                        settings.limits.sync_timeout_s)
        if job.status == "done" and job.result is not None:
            return Response(job.result, media_type="application/json",
                            headers={"X-Job-Id": job_id})
        if job.status in ("failed", "cancelled"):
            raise ApiError(422, "config", job.error or f"job {job.status}")
        await db(store.cancel, job_id, token_id)
        raise ApiError(504, "sync_timeout_s", f"no result within {settings.limits.sync_timeout_s:g}"
                       f" s (sync_timeout_s); submit it to {API}/jobs instead")

    @app.get(f"{API}/catalog/{{kind}}", tags=["catalog"], responses=_errors(422))
    def catalog(kind: service_catalog.Kind, _token: str = Depends(caller)) -> Any:
        """Catalog entries with their specs, in catalog units."""
        return service_catalog.entries(kind)

    @app.get(f"{API}/validation/files", tags=["catalog"], responses=_errors())
    def validation_files(_token: str = Depends(caller)) -> list[str]:
        """The bundled published-measurement files a validate job can name."""
        from trainsim.validate import bundled_files

        return [p.name for p in bundled_files()]

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/static/plotly.min.js", include_in_schema=False)
    def plotly_js() -> Response:
        path = service_catalog.plotly_js()
        if path is None:
            raise ApiError(404, "path", "plotly is not installed; the UI draws SVG instead")
        return FileResponse(path, media_type="text/javascript")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
