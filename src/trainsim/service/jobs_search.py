"""The search and plan jobs: ``trainsim search`` and ``trainsim plan`` from a request's
options (the CLI's flags with underscores), their flags' defaults taken from the request's run
config, a refusal that names a flag filed under the option the request wrote.

Split from ``service.jobs`` (robust57: 558 lines), which dispatches every kind.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainsim.config.cluster import MAX_PRICE_PER_HOUR, MAX_PUE
from trainsim.errors import TrainsimError
from trainsim.service.requests import (
    OPTIONS,
    Output,
    Progress,
    RequestError,
    _bound_gpus,
    _choice,
    _dumps,
    _flag,
    _float,
    _given_text,
    _int,
    _text,
    _write,
)
from trainsim.service.settings import Limits, Settings


@contextmanager
def _as_options(kind: str, given: frozenset[str]) -> Iterator[None]:
    """A search/plan input error naming a flag (``--zero values [5] ...``, ``--set parallel.ep
    > 1 ...``) that the request gave as an option, filed under that option as written
    (``options.zero``, ``options.set``) rather than ``config``, each flag of the kind named as
    its option; the flag first named is the one at fault (a hint '(--zero)' comes after it)."""
    try:
        yield
    except RequestError:
        raise
    except TrainsimError as exc:
        flag = r"(?<![\w-])--([a-z][a-z-]*)(?![\w-])"
        m = re.search(flag, str(exc))
        name = m.group(1).replace("-", "_") if m else None
        if name is None or name not in given:
            raise
        text = re.sub(flag, lambda f: f"options.{f.group(1).replace('-', '_')}"
                      if f.group(1).replace("-", "_") in OPTIONS[kind] else f.group(0), str(exc))
        raise RequestError(f"options.{name}", text) from None


def _defaults_from_config(config: dict[str, Any], opts: dict[str, Any], wd: Path) -> None:
    """Fill the search/plan flags the request left out from its run config."""
    from trainsim import catalog

    cluster = config.get("cluster") if isinstance(config.get("cluster"), dict) else {}
    training = config.get("training") if isinstance(config.get("training"), dict) else {}
    node = catalog.node(str(cluster["node"])) if "node" in cluster else {}
    model = opts["model"] if opts["model"] is not None else config.get("model")
    if model is None:
        raise RequestError("config.model", "config.model: a search needs a model")
    opts["model"] = model if isinstance(model, str) else _write(wd / "model.json", {"model": model})
    gpu = opts["gpu"] or cluster.get("gpu") or node.get("gpu") or "h100-sxm-80gb"
    opts["gpu"] = gpu if isinstance(gpu, str) else _write(wd / "gpu.json", {"gpu": gpu})
    fill = {"gpus_per_node": cluster.get("gpus_per_node", node.get("gpus_per_node", 8)),
            "nic_gbps": cluster.get("nic_gbit_s_per_gpu", cluster.get(
                "nic_gbps_per_gpu", node.get("nic_gbit_s_per_gpu", 400.0))),
            "dtype": training.get("dtype", "bf16"), "gpus": cluster.get("num_gpus"),
            "global_batch": training.get("global_batch_size"),
            "seq": training.get("seq_length", 8192 if "max_gpus" in opts else None)}
    for key, value in fill.items():
        if key in opts and opts[key] is None:
            opts[key] = value


def _space(opts: dict[str, Any], base: Any) -> Any:
    """The search space as ``trainsim search`` builds it from the same flags (narrowed by the
    ``set`` parallel fields of ``base``)."""
    from trainsim.search.cli_inputs import search_space

    return search_space(_text(opts["tp"]), _text(opts["pp"]), _text(opts["cp"]),
                        None if opts["max_vpp"] is None else _int(opts, "max_vpp", 1),
                        _int(opts, "max_micro_batch", 1),
                        _given_text(opts["recompute"]), _text(opts["zero"]),
                        _given_text(opts["overlap"]), _text(opts["ep"]), _text(opts["etp"]),
                        _text(opts["dispatcher"]), _text(opts["schedules"]), base)


def _bound_candidates(base: Any, counts: tuple[int, ...], space: Any, limits: Limits) -> None:
    n = 0
    block_alone = base.sends_block_alone  # as the search enumerates them (search.core)
    space = space.held_by(base)  # the switches and stages the framework lacks held, as there
    for gpus in counts:
        for key in space.memory_keys(base, gpus):
            n += len(space.variants(key, block_alone))
            if n > limits.max_candidates:
                raise RequestError("options", f"options: the search space holds more than "
                                   f"{limits.max_candidates} candidates (max_candidates); "
                                   "narrow it with tp, pp, cp, recompute, zero or overlap")


def _executor(settings: Settings) -> Any:
    """The executor of one search or plan job, starting from an empty evaluation cache: the job
    answers as a fresh ``trainsim search`` process does (the cache's hits show in its stats)."""
    from trainsim.search.core import DEFAULT_CACHE
    from trainsim.search.executors import make_executor

    DEFAULT_CACHE.__init__(DEFAULT_CACHE.max_entries)  # type: ignore[misc]

    if settings.search_executor == "ray":
        return make_executor("ray", None, settings.ray_address)
    return make_executor("serial")  # the service's worker pool is the parallelism


def search_job(config: dict[str, Any], opts: dict[str, Any], settings: Settings, wd: Path,
            run: bool, progress: Progress, given: frozenset[str] = frozenset()
            ) -> Output | None:
    from trainsim.search.cli_inputs import (
        build_base,
        nothing_found,
        parse_ints,
        parse_reference,
        said_warnings,
    )
    from trainsim.search.core import search

    _defaults_from_config(config, opts, wd)
    for key in ("gpus", "global_batch", "seq"):
        if opts[key] is None:
            raise RequestError(f"options.{key}", f"options.{key} is required (or give it in "
                               "the config's cluster/training section)")
    with _as_options("search", given):
        counts = parse_ints(_text(opts["gpus"]), "gpus") or ()
    for n in counts:
        _bound_gpus(n, "options.gpus", settings.limits)
    with said_warnings(say=False) as said, _as_options("search", given):  # said: in the result
        base = build_base(opts["model"], opts["gpu"], counts[0], _int(opts, "global_batch", 1),
                          _int(opts, "seq", 1), _int(opts, "gpus_per_node", 1),
                          _float(opts, "nic_gbps", above=0), opts["dtype"], tuple(opts["set"]))
        space = _space(opts, base)
        ref = (parse_reference(_given_text(opts["reference"]), base, counts[0])
               if opts["reference"] else None)  # as text: 3 was an AttributeError
    _bound_candidates(base, counts, space, settings.limits)
    from trainsim.search.core import forced_algo_refusal

    if (refused := forced_algo_refusal(base, counts, space)) is not None:  # as the search would
        from trainsim.search.cli_inputs import every_split_refused

        raise every_split_refused(base, tuple(dict.fromkeys(counts)), refused)
    top, rank_by = _int(opts, "top", 1), _choice(opts, "rank_by", ("split", "layout", "config"))
    exhaustive, want_plot = _flag(opts, "exhaustive"), _flag(opts, "plot")
    slowdown = _float(opts, "pareto_slowdown", least=1)
    if not run:
        return None
    ex = _executor(settings)
    try:
        result = search(base, counts, space, top_k=top, executor=ex,
                        rank_by=rank_by, exhaustive=exhaustive,
                        reference=ref, pareto_slowdown=slowdown,
                        progress=lambda phase, d, t: progress(d / max(1, t), phase))
    finally:
        ex.close()
    if not result.top:
        raise nothing_found(result)
    from trainsim.search.render import search_json

    plot = None
    if want_plot:  # as `trainsim search --plot FILE`
        from trainsim.report.plots import plot_search

        plot = plot_search(result.evaluated, wd / "plot.png", result.pareto,
                           result.best).read_bytes()
    return Output(search_json(result, said) + "\n", plot=plot)


def plan_job(config: dict[str, Any], opts: dict[str, Any], settings: Settings, wd: Path,
          run: bool, progress: Progress, given: frozenset[str] = frozenset()) -> Output | None:
    from trainsim.config.number_text import token_count
    from trainsim.config.training import check_run_tokens
    from trainsim.search.capacity import EnergyModel, plan
    from trainsim.search.cli import MAX_GRID_G_PER_KWH, MAX_NODE_OVERHEAD
    from trainsim.search.cli_inputs import build_base, check_plan_sets, said_warnings

    _defaults_from_config(config, opts, wd)
    for key in ("tokens", "days"):
        if opts[key] is None:
            raise RequestError(f"options.{key}", f"options.{key} is required")
    max_gpus = _int(opts, "max_gpus", 1)
    _bound_gpus(max_gpus, "options.max_gpus", settings.limits)
    with _as_options("plan", given):
        n_tokens = token_count(_given_text(opts["tokens"]), "--tokens")  # goodput's words
    days = _float(opts, "days", above=0)
    price = _float(opts, "price", optional=True, least=0, most=MAX_PRICE_PER_HOUR)
    seq = _int(opts, "seq", 1)
    gb = (_int(opts, "global_batch", 1) if opts["global_batch"] else
          max(1, 2 ** round(math.log2(4 * 2**20 / seq))))
    gpn = _int(opts, "gpus_per_node", 1)
    # each within the CLI flag's range (trainsim plan --pue 1..10, --grid 0..1e4, ...): the
    # service took pue 1000 and 1e5 g/kWh (robust55)
    pue = _float(opts, "pue", optional=True, least=1, most=MAX_PUE)
    energy_opts = (_float(opts, "gpu_idle_fraction", least=0, most=1),
                   _float(opts, "node_overhead", least=0, most=MAX_NODE_OVERHEAD), pue,
                   _float(opts, "grid", least=0, most=MAX_GRID_G_PER_KWH))
    with said_warnings(say=False) as said, _as_options("plan", given):
        check_plan_sets(tuple(opts["set"]), pue, price)
        base = build_base(opts["model"], opts["gpu"], gpn, gb, seq, gpn,
                          _float(opts, "nic_gbps", above=0), opts["dtype"], tuple(opts["set"]))
        energy = EnergyModel(*energy_opts)
        space = _space(opts, base)
        check_run_tokens(base.training, n_tokens, "--tokens")  # as plan() refuses it
    if not run:
        return None
    ex = _executor(settings)
    try:
        result = plan(base, n_tokens, days, space=space, executor=ex,
                      max_gpus=max_gpus, energy=energy, price_per_gpu_hour=price,
                      progress=lambda phase, d, t: progress(d / max(1, t), phase))
    finally:
        ex.close()
    return Output(_dumps({**result.to_dict(), "warnings": said}))


__all__ = ["plan_job", "search_job"]
