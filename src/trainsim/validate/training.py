"""Training rows: the iteration time (and memory) of a published run.

Empty cells in a row are settings the source did not state: the named framework's default at
that version where the framework decides, else a setting the authors tuned, so we choose the
fastest setting that fits in memory and report the choice ("unknown means tuned").
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from operator import itemgetter
from typing import Any

from trainsim.bound import lower_bound_s
from trainsim.catalog import gpu_assumed, run_config_from_dict
from trainsim.catalog.fallback import FALLBACK_KEPT, fallback_order, keeps_stack_defaults, run_date
from trainsim.catalog.shared_sections import sections_shared
from trainsim.config import RunConfig
from trainsim.config.records import positive_value
from trainsim.engine.loop import runs_shared
from trainsim.errors import ConfigError, SettingReplaced, TrainsimError
from trainsim.memo import chunks_shared, stage_memory
from trainsim.memory.estimate import MEMORY_KINDS
from trainsim.memory.offload import offload_admitted
from trainsim.pricing import Pricer, shared
from trainsim.result import Result
from trainsim.simulator import simulate
from trainsim.validate.assumed import assumed_cells
from trainsim.validate.common import GiB, RowResult, _cell, count_cell, measured_cell
from trainsim.validate.layouts import parallel_layouts, stated_pps
from trainsim.validate.row_settings import (
    NEEDED_COUNTS,
    TRAINING_REQUIRED,
    counts_checked,
    row_profile,
    training_base,
    with_choice,
)
from trainsim.validate.row_unknowns import KEPT_DEFAULTS
from trainsim.validate.vocab import framework_key, normalized_training_row, read_as, unprofiled

__all__ = ["TRAINING_REQUIRED", "predict_training_row", "row_config", "row_passes", "tune"]


def _fits(cfg: RunConfig) -> bool:
    hbm = cfg.cluster.gpu.hbm_bytes
    return all(stage_memory(cfg, s).total <= hbm for s in range(cfg.parallel.pp))


ENUMERATED = ("recompute", "microbatch_group_size_per_vp_stage")
"""Unknowns the tuner enumerates, descending over the others for each combination."""
PREFERRED = ("zero_stage",)
"""Enumerated unknowns whose first candidate wins wherever any setting of the others fits with
it, whatever its speed; where it never fits, the other candidates compete on speed. An empty
zero_stage on a plain PyTorch row is the profile's DDP (fp32 parameters under autocast,
validation README) wherever DDP fits; a run that DDP cannot hold must have switched to FSDP,
and the fastest of its stages that fits is taken (SHARD_GRAD_OP or FULL_SHARD,
``row_settings.user_zero_stages``)."""
_SHOWN: set[tuple[str, type]] | None = set()
"""Warnings a row's tuning raised that ``predict_training_row`` has shown again (each once a
process: its capture of the row's warnings would otherwise show them for every row); None
within ``every_row_warning``."""


@contextmanager
def every_row_warning() -> Iterator[None]:
    """Within it, each row's warnings are shown again for every row, not once a process: for
    ``validate_file``, which collects them row by row in whichever process predicts the row and
    says each once a file (once a process, a service worker's second job, or a worker process
    forked after the first, would say none of them)."""
    global _SHOWN
    kept, _SHOWN = _SHOWN, None
    try:
        yield
    finally:
        _SHOWN = kept


_PARTS: list[list[Any]] = []
"""Inside :func:`row_shared`: the distinct model and cluster objects of the configs the tuner
built for the row (one each, almost always)."""


@contextmanager
def row_shared() -> Iterator[None]:
    """Around one row's tuning: its candidates' pricers share what they priced
    (``pricing.shared``, a token of the row's own, so nothing outlives the row), and each
    candidate config the tuner builds takes the model and cluster of an earlier candidate equal
    to its own (:func:`_interned`). The shared prices are keyed by the cluster's identity and a
    pricer's settings, so without the one cluster every candidate priced its passes again
    (``_price_ops`` 8,437 -> 3,006 calls on the public file). The candidates' model and
    cluster sections are built once per distinct raw mapping (``catalog.shared_sections``),
    and candidates that differ only in optimizer-side fields price their chunks once
    (``memo.shared_chunks``). The same arithmetic on the same floats: every prediction is the same to the bit
    (tests/test_row_shared.py)."""
    _PARTS.append([])
    try:
        with shared(object()), sections_shared(), chunks_shared():
            yield
    finally:
        _PARTS.pop()


def _interned(cfg: RunConfig) -> RunConfig:
    """``cfg``, just built, with the model and cluster objects of an earlier config of this
    :func:`row_shared` where they are equal (frozen dataclasses compared field by field, so
    every reader gets the same values); outside one, ``cfg`` as it is. Set in place as
    ``RunConfig.fields_checked`` sets its fields: the checks that built ``cfg`` passed on equal
    parts, and nothing has read ``cfg`` yet."""
    if not _PARTS:
        return cfg
    seen = _PARTS[-1]
    d = cfg.__dict__
    for name in ("model", "cluster"):
        part = d[name]
        for other in seen:
            if other is part:
                break
            if type(other) is type(part) and other == part:
                d[name] = other
                break
        else:
            seen.append(part)
    return cfg


def _peak_within(cfg: RunConfig, hbm: float) -> float:
    """``max(stage_memory(cfg, s).total for s in range(pp))`` where that is at most ``hbm``;
    else a stage's figure over ``hbm`` (the stages after the first one over it are not
    estimated: on the public file 213 configs that do not fit needed 221 stage estimates of
    their 1,874). The same comparisons as ``max``, in stage order."""
    peak = stage_memory(cfg, 0).total
    for s in range(1, cfg.parallel.pp):
        if peak > hbm:
            break
        peak = max(peak, stage_memory(cfg, s).total)  # the later one only where larger
    return peak


def _prefer(value: Any) -> Callable[[list[Any]], Any]:
    """A picker of ``value`` where it is a candidate, else of the first candidate."""
    return lambda candidates: value if value in candidates else candidates[0]


LEAST_MEMORY: dict[str, Callable[[list[Any]], Any]] = {
    "micro_batch_size": min, "zero_stage": max, "recompute": _prefer("full"),
    "distributed_optimizer": _prefer(True), "sequence_parallel": _prefer(True),
    "grad_reduce_dtype": lambda c: next((v for v in c if v != "fp32"), c[0])}
"""How ``_tuned_layout`` picks an unknown's least-memory candidate (the smallest micro-batch,
the most sharded ZeRO stage, full recompute, the distributed optimizer, sequence
parallelism, a 16-bit gradient reduce); any other unknown, its first candidate."""


def tune(raw: dict[str, Any], unknown: dict[str, list[Any]],
         evaluate: Callable[[RunConfig], float],
         bound: Callable[[RunConfig], float] | None = None,
         kept: tuple[str, ...] = ()) -> tuple[RunConfig, dict[str, Any]]:
    """Fastest setting of the unknown fields among those that fit in memory.

    The time is minimised by coordinate descent over the settings that fit, one field at a
    time, until no single change helps, once for each combination of the ``ENUMERATED``
    choices (recompute, the interleaved group size). A setting is built and
    its memory checked (no simulation) when the descent first reaches it, in the same order
    as checking every combination first would give, so the answer is the same. With
    ``bound`` (a lower bound on ``evaluate``), a change whose bound is already no faster than
    the current setting is rejected without simulating it, and an enumerated choice whose every
    fitting setting is bounded (or simulated) no faster than the best descent so far is not
    descended: neither could have been chosen; and a descent's start is not simulated where
    the first candidate compared with it is bounded below the start's bound and simulated
    faster than that bound (each comparison answered as with the start's time: the
    simulations are those made without this, less the start's).
    ``kept`` (``row_unknowns.KEPT_DEFAULTS``): unknowns enumerated like recompute whose first
    candidate (the framework's default) is kept wherever the fastest setting of the others
    fits with it: a descent on another candidate moves only among settings that would not fit
    with the first one (the 16-bit gradient buffer a run takes to fit).
    If nothing fits, the least-memory setting is returned (and flagged by the caller).
    """
    names = list(unknown)
    status: dict[tuple, tuple[RunConfig | None, float | None, str | None]] = {}

    def check(values: tuple) -> tuple[RunConfig | None, float | None, str | None]:
        """(config, peak memory, error) of a setting; memory None when its offload copies
        would not hide and the engine does not price them (``offload_admitted``)."""
        hit = status.get(values)
        if hit is None:
            try:
                cfg = _interned(run_config_from_dict(with_choice(raw, dict(zip(names, values)))))
            except ConfigError as exc:
                hit = (None, None, str(exc))
            else:
                mem = _peak_within(cfg, cfg.cluster.gpu.hbm_bytes)
                hit = (cfg, mem if offload_admitted(cfg) else None, None)
            status[values] = hit
        return hit

    def fits(values: tuple) -> bool:
        cfg, mem, _ = check(values)
        return cfg is not None and mem is not None and mem <= cfg.cluster.gpu.hbm_bytes

    kept_at = [names.index(n) for n in kept if n in names]

    def usable(values: tuple) -> bool:
        """Fits, and takes no kept unknown off its first candidate where the setting would fit
        with that candidate (the first candidate's own descent covers it): a descent with a
        non-default kept value stays among the settings that need it."""
        if not fits(values):
            return False
        for i in kept_at:
            first = unknown[names[i]][0]
            if values[i] != first and fits(values[:i] + (first,) + values[i + 1:]):
                return False
        return True

    times: dict[tuple, float] = {}

    def cost(values: tuple) -> float:
        if values not in times:
            times[values] = evaluate(status[values][0])  # type: ignore[arg-type]
        return times[values]

    bounds: dict[tuple, float] = {}  # a setting's bound, computed once for every sweep

    def bound_of(values: tuple) -> float:
        if values not in bounds:
            bounds[values] = bound(status[values][0])  # type: ignore[misc, arg-type]
        return bounds[values]

    def faster(cand: tuple, current: tuple) -> bool:
        if bound is not None and current not in times:
            # a descent's start, not simulated yet: a candidate bounded below the start's bound
            # (so below its time, which would not have spared the candidate either) is
            # simulated first; where it is faster than that bound it is faster than the start,
            # which is then never simulated: the descent's later settings are faster still, so
            # the start's bound rejects it as a candidate, and no other descent or
            # ``ruled_out`` reads it (each has its own enumerated choices)
            cut = bound_of(current)
            if (cand in times or bound_of(cand) < cut) and cost(cand) < cut:
                return True
        now = cost(current)
        if bound is not None and cand not in times and bound_of(cand) >= now:
            return False
        return cost(cand) < now

    def descend(current: tuple, fixed: tuple[int, ...] = ()) -> tuple:
        improved = True
        while improved:
            improved = False
            for d, name in enumerate(names):
                for value in unknown[name] if d not in fixed else ():
                    cand = current[:d] + (value,) + current[d + 1:]
                    if cand != current and usable(cand) and faster(cand, current):
                        current, improved = cand, True
        return current

    # recompute (and the interleaved group size) is enumerated, the rest descended for each
    # choice: recomputing frees the memory that deeper interleaving or larger micro-batches
    # need, a pair of changes no single step of a descent makes; a group size matters only
    # with interleaving, which it may make fit. Each descent starts from the first setting
    # that fits with its enumerated choices (in the order of the candidate lists).
    d = tuple(names.index(n) for n in (*ENUMERATED, *PREFERRED, *kept) if n in names)
    starts = []
    for combo in itertools.product(*(unknown[names[i]] for i in d)):
        lists = [[combo[d.index(i)]] if i in d else unknown[n] for i, n in enumerate(names)]
        start = next((v for v in itertools.product(*lists) if usable(v)), None)
        if start is not None:
            starts.append(start)
    for i in (names.index(n) for n in PREFERRED if n in names):
        # only the descents of the first candidate (DDP) where it fits at all; else those of
        # every other candidate (the FSDP stages), which compete on speed below
        first = unknown[names[i]][0]
        if any(s[i] == first for s in starts):
            starts = [s for s in starts if s[i] == first]
    if not starts:
        fallback: tuple[float, tuple, RunConfig] | None = None
        first_error: str | None = None
        for values in itertools.product(*(unknown[n] for n in names)):
            cfg, mem, error = check(values)
            first_error = first_error or error
            if cfg is not None and mem is not None:  # the whole peak (_peak_within stops)
                mem = max(stage_memory(cfg, s).total for s in range(cfg.parallel.pp))
            if cfg is not None and mem is not None and (fallback is None or mem < fallback[0]):
                fallback = (mem, values, cfg)
        if fallback is None:
            raise ConfigError(first_error or "no valid setting")
        return fallback[2], dict(zip(names, fallback[1]))
    def ruled_out(start: tuple, best: tuple) -> bool:
        """Whether no setting that fits with ``start``'s enumerated choices can be faster than
        ``best``: every one's simulated time or lower bound is at least ``best``'s time.
        The answer does not depend on the order the settings are read in, only the bounds
        asked do: those already simulated or bounded are read first (free), then the others
        the fewest descended fields away from ``best`` first (a setting like the fastest so far
        is the likeliest below it), the order of the candidate lists on ties."""
        best_s = cost(best)
        lists = [[start[i]] if i in d else unknown[n] for i, n in enumerate(names)]
        settings = list(itertools.product(*lists))
        for v in settings:
            if (v in times or v in bounds) and usable(v) and \
                    times.get(v, bounds.get(v, 0.0)) < best_s:
                return False
        descended = [i for i in range(len(names)) if i not in d]
        for v in sorted(settings, key=lambda v: sum(v[i] != best[i] for i in descended)):
            if v in times or v in bounds or not usable(v):
                continue
            if bound_of(v) < best_s:
                return False
        return True

    # the fastest descent's end, the first one on ties (as ``min`` over them would pick); a
    # descent that the bounds of its enumerated choices rule out could not be faster: skipped
    best: tuple | None = None
    for start in starts:
        if best is not None and bound is not None and ruled_out(start, best):
            continue
        found = descend(start, d)
        if best is None or cost(found) < cost(best):
            best = found
    return status[best][0], dict(zip(names, best))  # type: ignore[index, arg-type]


def row_passes(row: dict[str, str]) -> float:
    """Pipeline passes of one iteration as the row's cells state it (2 x micro-batches x pp x
    vpp; an empty cp, micro-batch size or vpp taken as 1), 0.0 where a needed cell is not a
    count: a rough key for the order in which worker processes take rows (the longest
    first), never an input of a prediction."""
    try:
        n = {c: count_cell(row, c) if c in NEEDED_COUNTS or _cell(row, c) else 1
             for c in ("num_gpus", "tp", "pp", "cp", "global_batch_size", "micro_batch_size",
                       "vpp")}
    except ConfigError:
        return 0.0
    dp = max(1.0, n["num_gpus"] / (n["tp"] * n["pp"] * n["cp"]))
    return 2.0 * n["global_batch_size"] / (n["micro_batch_size"] * dp) * n["pp"] * n["vpp"]


FALLBACK_CHOICE = ("framework", "framework_version")
"""The keys of a ``RowResult.chosen`` that name the profile a row on a framework with no profile
here was predicted with (``catalog.fallback.fallback_order``), not a tuned setting."""


def row_config(row: dict[str, str], chosen: dict[str, Any] | None = None,
               compute_db: str | None = "auto") -> RunConfig:
    """The config :func:`predict_training_row` simulates for ``row``, with ``chosen`` (its
    ``RowResult.chosen``: the tuner's settings for the row's empty cells, and for a row on a
    framework with no profile here the profile that predicted it, ``FALLBACK_CHOICE``) filled
    in: for tools that look closer at a validated row (benchmarks/pair_timeline.py)."""
    chosen = chosen or {}
    row = {**normalized_training_row(row)[0],
           **{k: str(v) for k, v in chosen.items() if k in ("tp", "pp")}}
    if "framework" in chosen:  # a later profile of catalog.fallback.fallback_order's
        row["framework"] = str(chosen["framework"])
        row["framework_version"] = str(chosen.get("framework_version") or "")
    raw, _ = training_base(counts_checked(row))
    raw["cluster"]["compute_db"] = compute_db
    return run_config_from_dict(with_choice(raw, {k: v for k, v in chosen.items()
                                                  if k not in FALLBACK_CHOICE}))


def _tuned(row: dict[str, str], compute_db: str | None
           ) -> tuple[RunConfig, dict[str, Any], Result]:
    """The row's config with its empty cells tuned (its tp and pp given), that setting and its
    simulated result."""
    raw, unknown = training_base(row)
    raw["cluster"]["compute_db"] = compute_db
    simulated: dict[int, Result] = {}  # the tuner's results, by candidate, reused below
    # a candidate's pricer, shared by its bound and its simulation (the passes the bound
    # priced are not priced again); kept for this row only, so nothing outlives a setting
    pricers: dict[int, tuple[RunConfig, Pricer]] = {}

    def pricer_of(c: RunConfig) -> Pricer:
        hit = pricers.get(id(c))
        if hit is None or hit[0] is not c:
            hit = pricers[id(c)] = (c, Pricer(c))
        return hit[1]

    def evaluate(c: RunConfig) -> float:
        simulated[id(c)] = simulate(c, pricer=pricer_of(c))
        return simulated[id(c)].iteration_time_s

    def bound(c: RunConfig) -> float:
        return lower_bound_s(c, pricer_of(c))

    # candidates whose task graphs are equal run the event loop once (engine.runs_shared)
    # a framework with no profile here keeps no default of its stack (catalog.fallback)
    kept = tuple(k for k in KEPT_DEFAULTS if k in unknown) \
        if row_profile(row) and keeps_stack_defaults(row) else ()
    kept += tuple(k for k in FALLBACK_KEPT if k in unknown)
    with runs_shared():
        cfg, choice = tune(raw, unknown, evaluate, bound, kept)
        result = simulated.get(id(cfg)) or simulate(cfg)
    return cfg, choice, result


def _tuned_layout(row: dict[str, str], compute_db: str | None
                  ) -> tuple[RunConfig, dict[str, Any], Result]:
    """:func:`_tuned`, over the (tp, pp) layouts ``validate.layouts`` gives where the row
    leaves either empty: the fastest layout whose tuned setting fits in memory (else the
    fastest), its empty tp, pp (and a vpp derived from a stated pipeline layout) reported among
    the chosen settings."""
    tp, pp = _cell(row, "tp"), _cell(row, "pp")
    if tp is not None and pp is not None:
        return _tuned(row, compute_db)
    raw, _ = training_base({**row, "tp": tp or "1", "pp": pp or "1"})
    cp, ep, mb, vpp = (_cell(row, c) for c in ("cp", "ep", "micro_batch_size", "vpp"))
    layout = _cell(row, "pipeline_layout")
    pps_of_layout = stated_pps(layout, int(vpp) if vpp else None)

    def cells(t: int, p: int) -> dict[str, str]:
        """The row's cells for layout (t, p): with a stated pipeline layout and no vpp, vpp
        is the layout's stages over p, as Megatron-core derives it (``stated_pps``)."""
        got = {"tp": str(t), "pp": str(p)}
        if pps_of_layout is not None and vpp is None:
            got["vpp"] = str(max(pps_of_layout) // p)  # the largest pp: all the stages
        return got

    def could_fit(t: int, p: int) -> bool:
        """Whether the layout fits at its least-memory setting (full recompute, the smallest
        micro-batch, the distributed optimizer and sequence parallelism where they are
        candidates, the most sharded ZeRO stage): one that does not cannot fit tuned."""
        base, unknown = training_base({**row, **cells(t, p)})
        choice = {k: LEAST_MEMORY.get(k, itemgetter(0))(v) for k, v in unknown.items() if v}
        try:
            return _fits(run_config_from_dict(with_choice(base, choice)))
        except ConfigError:
            return False  # tried only if no layout passes: the tuner reports it
    profile = row_profile(row)
    uneven = pps_of_layout is not None or profile is None or \
        profile.supports("uneven_pipeline") is not False
    pps = pps_of_layout if pp is None else (int(pp),)
    if pps is None and framework_key(_cell(row, "framework") or "") in \
            ("deepspeed", "megatron-deepspeed") and int(_cell(row, "zero_stage") or 0) >= 2:
        # DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 ("ZeRO-2 and ZeRO-3 are
        # incompatible with pipeline parallelism": deepspeed/runtime/pipe/engine.py@v0.9.0
        # L56, @v0.16.4 L78), the engine Megatron-DeepSpeed's GPTModelPipe runs on
        # (pretrain_gpt.py@8387ae17 L56-58)
        pps = (1,)
    # with pp stated only tp is enumerated: the stated vpp is the row's own (a split the
    # enumeration's front-loaded rule cannot place, 126 layers on pp 16 x vpp 8 with the
    # embedding and loss as stages, is still the row's), checked when each layout is tuned
    layouts = parallel_layouts(raw, int(tp) if tp else None, pps,
                               int(cp or 1), int(ep) if ep else None, int(mb) if mb else None,
                               int(vpp) if vpp and pp is None else None, uneven, could_fit)
    if _cell(row, "dp") is not None:  # a stated dp keeps the layouts that have it
        dp = int(row["dp"])
        layouts = [(t, p) for t, p in layouts
                   if t * p * int(cp or 1) * dp == int(row["num_gpus"])]
        if not layouts:
            raise ConfigError(f"column dp={dp}: no tensor x pipeline layout of the "
                              f"{row['num_gpus']} GPUs with cp={cp or 1} has it")
    best: tuple[tuple[bool, float], RunConfig, dict[str, Any], Result] | None = None
    error = None
    reasons = set()  # the distinct errors of the layouts that failed
    for t, p in layouts:
        try:
            cfg, choice, result = _tuned({**row, **cells(t, p)}, compute_db)
        except ConfigError as exc:
            error = error or f"tp={t} pp={p}: {exc}"
            reasons.add(str(exc))
            continue
        key = (not result.fits_in_memory, result.iteration_time_s)
        if best is None or key < best[0]:
            tuned = {k: int(v) for k, v in cells(t, p).items() if _cell(row, k) is None}
            best = (key, cfg, {**tuned, **choice}, result)
    if best is None and len(reasons) == 1 and len(layouts) > 1:
        raise ConfigError(reasons.pop())  # a cell every layout refuses, not the layout
    if best is None:
        empty = " and ".join(c for c, v in (("tp", tp), ("pp", pp)) if v is None)
        why = error or "none divides the model and batch" + (f" with vpp={vpp}" if vpp else "")
        raise ConfigError(f"column {empty} empty and no tensor x pipeline layout of the "
                          f"{row['num_gpus']} GPUs runs ({why})")
    return best[1], best[2], best[3]


def predict_training_row(row: dict[str, str], compute_db: str | None = "auto") -> RowResult:
    """The row's iteration simulated as its framework ran it (empty cells tuned), with the
    kernel database ``compute_db`` ('auto': the one bundled for the row's GPU; None: the
    analytic model only; or a path). A row on a framework with no profile here whose chosen
    profile's checks refuse it is predicted with the next of ``catalog.fallback.fallback_order``
    that accepts it; where none does it fails with the first refusal."""
    first = _predicted_row(row, compute_db)
    text = _cell(row, "framework") or ""
    if first.error is None or first.error.startswith("internal error") or \
            not text.isprintable() or not unprofiled(framework_key(text)):
        return first
    try:
        chosen = normalized_training_row(row)[0]["framework"]
    except TrainsimError:  # its cells refused before any profile was chosen
        return first
    date = run_date(_cell(row, "framework_version"))
    for attempt in range(1, len(fallback_order(chosen, date))):
        res = _predicted_row(row, compute_db, attempt, f"{chosen} refuses: {first.error}")
        if res.error is None:
            return res
    return first


def _predicted_row(row: dict[str, str], compute_db: str | None, fallback: int = 0,
                   passed_over: str = "") -> RowResult:
    """:func:`predict_training_row` with the ``fallback``-th profile of a framework with no
    profile here, the refusal of the first (``passed_over``) told in its ``read_as``."""
    text = _cell(row, "framework") or ""
    source_key = framework_key(text or "unknown")
    stranger = text.isprintable() and unprofiled(framework_key(text))  # read by a fallback
    gpu_text = _cell(row, "gpu")  # as written: a name without a form factor is assumed SXM
    try:
        # other spellings of the vocabulary columns and numbers written with units or digit
        # groups, read as the README's (``validate.vocab``, ``validate.written``)
        row, read = normalized_training_row(row, fallback)
        if passed_over:
            read["framework"] += f"; {passed_over}"
    except TrainsimError as exc:  # the row fails with the reason, the measurement as written
        return RowResult(id=row.get("id", "?"), error=str(exc), extra={"source_key": source_key},
                         measured=positive_value(_cell(row, "measured_iteration_s")) or 0.0)
    res = RowResult(id=row.get("id", "?"), measured=measured_cell(row, "measured_iteration_s"))
    res.extra = {"source_key": source_key}
    if _cell(row, "measured_peak_memory_gib"):
        res.measured_memory_gib = measured_cell(row, "measured_peak_memory_gib")
    try:
        kind = _cell(row, "memory_kind")
        if kind is not None and kind not in MEMORY_KINDS:
            # the row fails, as for any other bad cell: checked after the simulation, it kept
            # its time in the MAPE while its JSON named an error and the table showed none
            raise ConfigError(f"memory_kind={kind!r} is not allocated, reserved or device")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SettingReplaced)
            with row_shared():
                cfg, choice, result = _tuned_layout(counts_checked(row), compute_db)
        assumed = assumed_cells(row, cfg, choice)  # what the empty cells it left were taken as
        if gpu_text and (form := gpu_assumed(gpu_text)):
            assumed["gpu"] = form
    except (TrainsimError, ValueError, KeyError) as exc:
        res.error = str(exc)
        return res
    except (ArithmeticError, LookupError, TypeError, AttributeError, RecursionError) as exc:
        # a trainsim bug on this row fails the row, not the file of rows after it
        res.error = f"internal error: {type(exc).__name__}: {exc} (a trainsim bug; please report)"
        return res
    notes = list(dict.fromkeys(str(w.message) for w in caught
                               if issubclass(w.category, SettingReplaced)))
    for w in caught:  # the others as they would have been shown: once a process, not a row
        key = (str(w.message), w.category)
        if not issubclass(w.category, SettingReplaced) and (_SHOWN is None or key not in _SHOWN):
            if _SHOWN is not None:
                _SHOWN.add(key)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    res.predicted = result.iteration_time_s
    res.chosen = {k: v for k, v in choice.items()}
    if stranger:
        # the profile that predicted a row on a framework with no profile here: the tool's
        # choice, which row_config rebuilds the row with
        res.chosen["framework"] = row["framework"]
        if row.get("framework_version"):
            res.chosen["framework_version"] = row["framework_version"]
    # a figure of the kind the row measured, at the stage whose figure is largest
    res.predicted_memory_gib = max(m.of_kind(kind) for m in result.memory) / GiB if kind \
        else result.peak_memory_bytes / GiB
    res.fits_in_memory = result.fits_in_memory
    t, p = cfg.training, cfg.parallel
    res.extra = {"mfu": result.mfu, "breakdown": result.breakdown, "source_key": source_key,
                 # what the framework profile (or the tool) used where the row is silent
                 "settings": {"attention": t.attention, "fp8_recipe": t.fp8_recipe,
                              "grad_reduce_in_fp32": t.grad_reduce_in_fp32,
                              "stage_layers": list(cfg.stage_layer_counts),
                              "moe_token_dispatcher_type": p.moe_token_dispatcher_type,
                              "moe_overlap_ep_comm": p.moe_overlap_ep_comm,
                              "cuda_graphs": t.cuda_graphs}, **read_as(read),
                 # a default the run could not take, and what replaced it (SettingReplaced)
                 **({"notes": notes} if notes else {}),
                 **({"assumed": assumed} if assumed else {})}
    return res
