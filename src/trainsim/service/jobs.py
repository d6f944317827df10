"""The six job kinds: check a request before it is queued, run it in a worker.

Each kind calls the same public functions as its CLI command and formats its result the way
that command prints it with ``--format json`` (``trainsim simulate``, ``search``, ``plan``,
``sweep``, ``goodput``, ``validate``), so a job's result is byte-for-byte the CLI's output;
tests/test_service_jobs.py holds each kind to that.

``config`` is a run config as in YAML; ``options`` are the command's flags with underscores
(``{"set": ["parallel.tp=4"], "trace": true}``, ``{"gpus": "8,16", "top": 5}``), read and
refused by ``service.requests``. The search and plan jobs are ``service.jobs_search``'s.
"""

from __future__ import annotations

import dataclasses
import math
import re
import warnings
from pathlib import Path
from typing import Any

from trainsim.config import safe_load
from trainsim.config._build import type_name
from trainsim.errors import ConfigError, TrainsimError, one_line
from trainsim.service.jobs_search import plan_job, search_job
from trainsim.service.requests import (
    KINDS,
    OPTIONS,
    Output,
    Progress,
    RequestError,
    _bound_gpus,
    _dumps,
    _flag,
    _float,
    _given_text,
    _int,
    _no_server_files,
    _no_server_paths,
    _options,
    _workdir,
    _write,
)
from trainsim.service.settings import Limits, Settings

# ------------------------------------------------------------------------------ simulate

def _simulate(config: dict[str, Any], opts: dict[str, Any], limits: Limits, wd: Path,
              run: bool) -> Output | None:
    from trainsim.catalog import load_run_config
    from trainsim.search.cli_inputs import said_warnings

    with said_warnings(say=False) as said:  # in the result, as the CLI's JSON carries them
        cfg = load_run_config(_write(wd / "config.json", config), opts["set"])
        _bound_gpus(cfg.cluster.num_gpus, "config.cluster.num_gpus", limits)
        trace, want_plot = _flag(opts, "trace"), _flag(opts, "plot")
        if not run:
            from trainsim.deferred_wgrad import deferral_problem
            from trainsim.network.forced_algo import forced_algo_problem
            from trainsim.pipeline import schedule_refusal

            # simulate would refuse it once it ran (collfab61: a forced nccl_algo a group of
            # the run cannot run, refused before the job is queued; robust63: an output-layer
            # deferral its schedule cannot run)
            if refusal := schedule_refusal(cfg) or forced_algo_problem(cfg) or \
                    deferral_problem(cfg):
                raise ConfigError(refusal)
            return None
        from trainsim.report import write_chrome_trace
        from trainsim.simulator import simulate

        trace_path = wd / "trace.json" if trace else None
        result = simulate(cfg, keep_timeline=trace_path is not None)
    trace = None
    if trace_path is not None and result.timeline is not None:
        write_chrome_trace(result.timeline, trace_path, title=cfg.model.name,
                           info=result.simulation)
        trace = trace_path.read_text()
    plot = None
    if want_plot:  # as `trainsim simulate --plot FILE`
        from trainsim.report.plots import plot_result

        plot = plot_result(result, wd / "plot.png").read_bytes()
    return Output(_dumps({**result.to_dict(), "warnings": said}), trace, plot)


# ------------------------------------------------------------------------------ sweep

def _sweep(config: dict[str, Any], opts: dict[str, Any], limits: Limits, wd: Path,
           run: bool, progress: Progress) -> Output | None:
    from trainsim.catalog import read_config_file
    from trainsim.search.whatif import Vary, sweep

    steps, want_plot = _int(opts, "steps", 1), _flag(opts, "plot")
    vs = [Vary.parse(v, steps) for v in opts["vary"]]
    if not vs:
        raise RequestError("options.vary", "options.vary: sweep needs at least one field to vary")
    points = math.prod(len(v.values) for v in vs)
    if points > limits.max_sweep_points:
        raise RequestError("options.vary", f"options.vary: {points} grid points, more than this "
                           f"server's max_sweep_points={limits.max_sweep_points}")
    raw = read_config_file(_write(wd / "config.json", config))
    if not run:
        from trainsim.catalog import apply_overrides, run_config_from_dict

        cfg = run_config_from_dict(apply_overrides(raw, opts["set"]))
        _bound_gpus(cfg.cluster.num_gpus, "config.cluster.num_gpus", limits)
        _sweep_points_refused(raw, vs, opts["set"])
        return None
    result = sweep(raw, vs, opts["set"], progress=lambda d, t: progress(d / t, "simulate"))
    from trainsim.search.render import sweep_json

    notes = result.warnings()  # the CLI's stderr lines, as its JSON carries them
    plot = result.plot(wd / "plot.png").read_bytes() if want_plot else None  # as --plot
    return Output(sweep_json(result.rows(), [v.path for v in result.varies], notes) + "\n",
                  plot=plot)


def _sweep_points_refused(raw: dict[str, Any], vs: list[Any], sets: list[str]) -> None:
    """Refuse, before queueing, a sweep whose every point its config or a forced
    ``cluster.nccl_algo`` refuses (``search.whatif.sweep`` raises "no point of the sweep is a
    valid config" then; robust62: the service queued it and failed the job). Each point is
    checked as the sweep checks it first (``run_config_from_dict``, then ``simulate``'s
    ``forced_algo_problem``); a point either takes is left to the run."""
    from trainsim.catalog import apply_overrides, run_config_from_dict
    from trainsim.network.forced_algo import forced_algo_problem
    from trainsim.search.whatif import sweep_points

    base = apply_overrides(raw, list(sets))
    first = None
    for point in sweep_points(vs):
        try:
            with warnings.catch_warnings():  # said by the run, with its result
                warnings.simplefilter("ignore")
                cfg = run_config_from_dict(apply_overrides(base, point))
        except TrainsimError as exc:
            first = first or str(exc)
            continue
        if (problem := forced_algo_problem(cfg)) is None:
            return
        first = first or problem
    if first is not None:
        raise ConfigError(f"no point of the sweep is a valid config; first error: {first}")


# ------------------------------------------------------------------------------ goodput

def _goodput(config: dict[str, Any], opts: dict[str, Any], limits: Limits, wd: Path,
             run: bool) -> Output | None:
    from trainsim.reliability.cli import load_goodput_config, parse_duration, parse_tokens

    trials = _int(opts, "trials", 1)
    if trials > limits.max_trials:
        raise RequestError("options.trials", f"options.trials={trials}: more than this server's "
                           f"max_trials={limits.max_trials}")
    failures = opts["failures"]
    if failures is not None and ("/" in str(failures) or "\\" in str(failures)):
        raise RequestError("options.failures", "options.failures: give a catalog profile name")
    gpus = None if opts["gpus"] is None else _int(opts, "gpus", 1)
    interval_s = None if opts["interval"] is None else \
        parse_duration(_given_text(opts["interval"]))
    cfg, rel = load_goodput_config(_write(wd / "config.json", config), tuple(opts["set"]), gpus,
                                   failures, "options.failures", interval_s, "options.")
    _bound_gpus(cfg.cluster.num_gpus, "config.cluster.num_gpus", limits)
    if interval_s is not None:
        rel = dataclasses.replace(rel, checkpoint=dataclasses.replace(
            rel.checkpoint, interval_s=interval_s))
    tokens = parse_tokens(_given_text(opts["tokens"])) if opts["tokens"] is not None else None
    # every option read before the job is queued: a job accepted (202) then refused when run
    # was a failed job for what a 422 could have said (fuzz11)
    days = _float(opts, "days", optional=True, above=0)
    seed, sweep, want_plot = _int(opts, "seed"), _flag(opts, "sweep"), _flag(opts, "plot")
    if tokens is None and days is None and cfg.training.train_tokens is None:
        raise RequestError("options.tokens", "options.tokens: give the run's tokens (or "
                           "options.days, or the config's training.train_tokens)")
    name = "options.tokens" if tokens is not None else "options.days" if days is not None \
        else "config.training.train_tokens"  # (a window of days: the run's tokens unread)
    if not run:
        _goodput_bounded(cfg, rel, tokens, days, trials, sweep or want_plot, name)
        return None
    from trainsim.limits import WorkLimitError
    from trainsim.reliability.goodput import goodput

    try:  # tokens between the bound's limit and the run's (or a schedule with no bound)
        result = goodput(cfg, rel, tokens=tokens, days=days, trials=trials, seed=seed,
                         sweep=sweep or want_plot, tokens_name=name)
    except WorkLimitError as exc:
        raise WorkLimitError(_rounds_refused(exc, name, tokens)) from None
    plot = None
    if want_plot:  # as `trainsim goodput --plot FILE`, which also sweeps the interval
        from trainsim.reliability.plot import plot_goodput

        plot = plot_goodput(result, wd / "plot.png").read_bytes()
    return Output(_dumps(result.to_dict()), plot=plot)


def _goodput_bounded(cfg: Any, rel: Any, tokens: float | None, days: float | None,
                     trials: int, sweep: bool, name: str) -> None:
    """Refuse, before queuing, the tokens a goodput run would refuse: fewer than one global
    batch, or so many that its trial-rounds exceed the limit. That limit needs the iteration
    time; a lower bound of it (``bound.lower_bound_s``: the priced passes, no event loop)
    refuses only what the run would (options.tokens 1e308 was accepted and failed when run,
    fuzz11); a schedule it does not bound is left to the run."""
    from trainsim.bound import lower_bound_s
    from trainsim.limits import WorkLimitError
    from trainsim.reliability.goodput import DAY_S, check_rounds, check_tokens, check_window

    tokens = tokens if tokens is not None or days is not None else cfg.training.train_tokens
    if tokens is None and days is None:
        return
    if tokens is not None:
        try:
            check_tokens(cfg, tokens, name)
        except TrainsimError as exc:
            raise RequestError(name, str(exc)) from None
    bound_s = lower_bound_s(cfg)
    if days is not None and days * DAY_S < bound_s:  # robust62: a window shorter than one
        from trainsim.simulator import simulate  # iteration was queued, then refused: the
        # run's words quote the iteration itself, simulated only where it refuses for certain

        check_window(days, simulate(cfg).iteration_time_s)
    if bound_s > 0:
        try:
            check_rounds(cfg, rel, tokens=tokens, days=days, iteration_time_s=bound_s,
                         trials=trials, sweep=sweep)
        except WorkLimitError as exc:
            raise RequestError(name, _rounds_refused(exc, name, tokens)) from None


def _rounds_refused(exc: Exception, name: str, tokens: float | None) -> str:
    """A goodput trial-round refusal in the request's names (options.trials, not --trials); the
    limit is the server's (TRAINSIM_MAX_TRIALS), not a request option."""
    text = re.sub(r"--(trials|tokens|days|interval)\b", lambda m: f"options.{m.group(1)}",
                  str(exc)).replace("goodput --max-trial-rounds N or ", "")
    return f"{name}={tokens:g}: {text}" if tokens is not None else text


# ------------------------------------------------------------------------------ validate

def _validate(opts: dict[str, Any], limits: Limits, wd: Path, run: bool,
              progress: Progress) -> Output | None:
    from trainsim.search.cli_inputs import said_warnings
    from trainsim.validate import BUNDLED_DIR, bundled_files, row_count, summarize, validate_file

    single = opts["file"] is not None or opts["csv"] is not None
    want_plot = _flag(opts, "plot")
    if want_plot and not single:  # the CLI writes one figure per bundled file; a job has one
        raise RequestError("options.plot", "options.plot: a job holds one figure; give "
                           "options.file or options.csv")
    if opts["csv"] is not None:
        if not isinstance(opts["csv"], str):
            raise RequestError("options.csv", "options.csv: expected the CSV file's text")
        files = [wd / "upload.csv"]
        files[0].write_text(opts["csv"])
    elif opts["file"] is not None:
        names = [p.name for p in bundled_files()]
        if opts["file"] not in names:
            raise RequestError("options.file", f"options.file={opts['file']!r}: not a bundled "
                               f"file; known: {', '.join(names)}")
        files = [BUNDLED_DIR / opts["file"]]
    else:
        files = bundled_files()
    try:
        counts = [row_count(f) for f in files]
    except TrainsimError as exc:  # the upload's refusal named the server's temporary file
        if opts["csv"] is None:
            raise
        raise RequestError("options.csv", "options.csv" + str(exc).replace(
            str(files[0]), "", 1)) from None
    if sum(counts) > limits.max_validate_rows:
        raise RequestError("options.csv", f"options.csv: {sum(counts)} rows, more than this "
                           f"server's max_validate_rows={limits.max_validate_rows}")
    if not run:
        return None
    report: dict[str, Any] = {}
    done = 0
    plot = None
    for path, n in zip(files, counts):
        with said_warnings(say=False) as said:  # in the result, as the CLI's JSON carries them
            kind, results = validate_file(path, progress=lambda i, _n, d=done, name=path.name:
                                          progress((d + i) / max(1, sum(counts)),
                                                   f"predicting {name}"))
        done += n
        # the upload named as the request gave it, a bundled file by its name: no server path
        shown = "options.csv" if opts["csv"] is not None else path.name
        report[path.name] = {"rows": [r.to_dict() for r in results],
                             "summary": summarize(results),
                             "warnings": [w.replace(str(path), shown) for w in said]}
        if want_plot:  # as `trainsim validate FILE --plot FILE`: the rows the JSON holds
            from trainsim.validate.plot import plot_validation

            plot = plot_validation(kind, results, wd / "plot.png",
                                   title=opts["file"] or "uploaded CSV").read_bytes()
    return Output(_dumps(report[files[0].name] if single else report), plot=plot)


# ------------------------------------------------------------------------------ entry points

def _dispatch(kind: str, config: Any, options: Any, settings: Settings, run: bool,
              progress: Progress) -> Output | None:
    if kind not in KINDS:
        raise RequestError("kind", f"kind={kind!r}: expected one of {', '.join(KINDS)}")
    if not isinstance(config, dict):
        raise RequestError("config", "config: expected a run config mapping (as in YAML)")
    if not isinstance(options, dict):
        raise RequestError("options", "options: expected a mapping of the command's flags")
    _no_server_files(config)
    opts = _options(kind, options)
    given = frozenset(k for k, v in options.items() if v is not None)  # as the request wrote
    _no_server_paths(kind, config, opts)
    limits = settings.limits
    try:
        with _workdir() as wd:
            if kind == "simulate":
                return _simulate(config, opts, limits, wd, run)
            if kind == "sweep":
                return _sweep(config, opts, limits, wd, run, progress)
            if kind == "goodput":
                return _goodput(config, opts, limits, wd, run)
            if kind == "validate":
                return _validate(opts, limits, wd, run, progress)
            if kind == "search":
                return search_job(config, opts, settings, wd, run, progress, given)
            return plan_job(config, opts, settings, wd, run, progress, given)
    except RequestError:
        raise
    except TrainsimError as exc:  # the CLI's own words: its flags named as this request's
        field, text = _request_names(kind, str(exc))
        if field is None:
            raise
        raise RequestError(field, text) from None
    except (TypeError, ValueError) as exc:  # an option of the wrong type
        raise RequestError("options", f"options: {exc}") from None


_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z-]*[a-z])\b")


def _request_names(kind: str, text: str) -> tuple[str | None, str]:
    """(the field, ``text``) with each CLI flag that is an option of ``kind`` named as the
    request spells it (``--tokens`` -> ``options.tokens``, ``--max-vpp`` ->
    ``options.max_vpp``): the refusals come from the CLI's code, and a request has no flags
    (robust56: a goodput job's ``options.tokens: -1`` was "--tokens '-1' must be positive",
    its field ``config``). The field is the first option named (or the one the text starts
    with, ``options.failures``); None where none is."""
    known = OPTIONS[kind]
    named: list[str] = []

    def option(m: re.Match[str]) -> str:
        key = m.group(1).replace("-", "_")
        if key not in known:
            return m.group(0)
        named.append(key)
        return f"options.{key}"
    text = _FLAG.sub(option, text)
    if not named and (m := re.match(r"options\.(\w+)", text)) and m.group(1) in known:
        named.append(m.group(1))  # the CLI's code told the request's name (goodput's failures)
    return (f"options.{named[0]}" if named else None), text


def read_config(config: Any) -> Any:
    """A request's ``config``: a mapping as sent, or a run config's YAML text (the web UI's
    editor sends what was typed) read by the CLI's loader, ``config.safe_load.parse``, as
    ``trainsim simulate FILE.yaml`` reads the file: ``framework_version: 0.10`` is
    Megatron-core 0.10 (a browser's ``Number`` made it 0.1), ``010`` is refused, not 10."""
    if not isinstance(config, str):
        return config
    try:
        data = safe_load.parse(config, "config")
    except TrainsimError as exc:
        raise RequestError("config", str(exc)) from None
    if data is None:  # nothing but comments: the empty config, as an empty mapping sent
        return {}
    if not isinstance(data, dict):
        raise RequestError("config", "config: a run config's YAML holds a mapping of sections "
                           f"(model, parallel, training, cluster), not a {type_name(data)}")
    return data


def check(kind: str, config: Any, options: Any, settings: Settings) -> None:
    """Raise RequestError (or the CLI's ConfigError) if the job cannot or may not run."""
    _dispatch(kind, config, options, settings, run=False, progress=lambda f, p: None)


def problem(kind: str, config: Any, options: Any, settings: Settings
            ) -> tuple[int, str, str] | None:
    """(HTTP status, field, message) of what is wrong with a request, or None. Plain data,
    so a checker process can answer it."""
    try:
        check(kind, config, options, settings)
    except RequestError as exc:
        return exc.status, exc.field, one_line(str(exc))
    except TrainsimError as exc:  # the CLI's own message, e.g. "tp=3 does not divide ..."
        return 422, "config", one_line(str(exc))
    return None


def run(kind: str, config: Any, options: Any, settings: Settings,
        progress: Progress = lambda f, p: None) -> Output:
    """Run one job to its CLI-identical result (raises what the CLI would report)."""
    out = _dispatch(kind, config, options, settings, run=True, progress=progress)
    if out is None:  # every kind returns an Output when run
        raise RuntimeError(f"job kind {kind} produced no output")
    return out
