"""Parallel layouts of a training row that leaves its tensor or pipeline size empty.

A published run that states only its GPU count was laid out by its authors: Megatron-LM's
``--tensor-model-parallel-size`` and ``--pipeline-model-parallel-size`` default to 1
(megatron/training/arguments.py@core_v0.12.0 lines 2036, 2040), a default no run of a large
model keeps, so an empty tp or pp is a tuned setting, not a default. The layouts are the ones
``trainsim search`` enumerates (``search.space.SearchSpace.memory_keys``: tp dividing the
heads, the KV heads and the FFN within a node, pp splitting the layers as the framework can,
dp dividing the global batch), restricted to the row's stated cells; the validator tunes each
one's other empty cells and keeps the fastest that fits (``validate.training``). An empty cp
or ep is not a layout choice here: the layouts are enumerated at cp 1 (Megatron's default
``--context-parallel-size``) and an empty cp is tuned with each layout's other cells
(``row_settings.context_sizes``), as an MoE row's ep is (``row_settings.unknowns``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from trainsim.catalog import run_config_from_dict
from trainsim.config.layout import parse_layout
from trainsim.errors import ConfigError
from trainsim.search.rules import unsharded_zero

MAX_LAYOUTS = 24
"""Most (tp, pp) layouts tuned for one row, those with the fewest model-parallel ranks
(tp x pp) first (the least communication; ties: the smaller tp) among those that pass
``could_fit``: each costs one tuning of the row's other cells (measured 2026-11-25 on 2 cores:
0.05-0.5 s for a dense row, ~2 s for an MoE row with its dispatcher and ep also empty, so such a
row can take ~40 s). A 12,288-GPU row of a 175B model has about 46 layouts; the cap can leave out
the fastest one where more than 24 fit."""


@functools.cache
def _any_split() -> type:
    """A search's Base whose layers may split unevenly over any pipeline size: the
    enumeration takes every pp for the front-loaded rule (``SearchSpace.memory_keys``).
    Made on first use, with ``search.space`` imported then: most rows state tp and pp, and
    ``trainsim validate`` starts without the search's enumeration (``search.__init__``)."""
    from trainsim.search.space import Base

    class _AnySplit(Base):
        @property
        def layout_rule(self) -> str:
            return "front_loaded"

    return _AnySplit


def parallel_layouts(raw: dict[str, Any], tp: int | None, pp: tuple[int, ...] | None,
                     cp: int,
                     ep: int | None, micro_batch: int | None, vpp: int | None,
                     uneven: bool = False,
                     could_fit: Callable[[int, int], bool] = lambda tp, pp: True
                     ) -> list[tuple[int, int]]:
    """(tp, pp) layouts of the run ``raw`` describes (its parallel section ignored) with the
    given sizes kept (``pp``: the pipeline sizes allowed, None for any), in the order they are tried: at most :data:`MAX_LAYOUTS` of those
    ``could_fit`` accepts (a quick memory check of the caller's), else of all of them.
    ``uneven``: layers that do not split evenly over pp can be placed (the validator's
    pipeline layout for the row's framework, ``row_settings.unknowns``, or a stated layout)."""
    from trainsim.search.space import Base, SearchSpace

    training = {k: v for k, v in raw["training"].items()
                if k not in ("micro_batch_size", "local_batch_size")}
    num_gpus = int(raw["cluster"]["num_gpus"])
    # one GPU: the model, batch and node as a search's Base holds them (a layout is checked
    # against num_gpus by the enumeration, not by this config)
    one = run_config_from_dict({"model": raw["model"], "training": training, "parallel": {},
                                "cluster": {**raw["cluster"], "num_gpus": 1}})
    # one ZeRO stage, the least the run's engine has (config.validity.ZERO_STAGES): only the
    # (tp, pp) pairs are kept, and a stage the engine lacks (0 under FSDP) would leave none
    space = SearchSpace(tp=(tp,) if tp else None, pp=pp, cp=(cp,),
                        micro_batch=(micro_batch,) if micro_batch else None,
                        recompute=("none",), sequence_parallel=(False,),
                        zero=(unsharded_zero(one.parallel.data_parallel_impl),),
                        vpp=(vpp or 1,), max_vpp=max(8, vpp or 1), ep=(ep,) if ep else None,
                        schedules=("",))
    base = (_any_split() if uneven else Base).of(one)
    found = dict.fromkeys((k.tp, k.pp) for k in space.memory_keys(base, num_gpus))
    ordered = sorted(found, key=lambda tp_pp: (tp_pp[0] * tp_pp[1], tp_pp[0]))
    return ([t for t in ordered if could_fit(*t)] or ordered)[:MAX_LAYOUTS]


def stated_pps(layout: str | None, vpp: int | None) -> tuple[int, ...] | None:
    """The pipeline sizes a stated ``pipeline_layout`` of Megatron-core stages allows, None
    where it names a rule or is not given: its virtual stages over the stated vpp, or with
    vpp empty every pp dividing the stages (Megatron-core asserts the stages divide by pp and
    takes vpp = stages // pp: megatron/core/transformer/pipeline_parallel_layer_layout.py@
    core_v0.14.0rc7 lines 36-41). A stated vpp that does not divide the stages is an error."""
    if not layout or "|" not in layout:
        return None
    stages = len(parse_layout(layout))
    if vpp is None:
        return tuple(p for p in range(1, stages + 1) if stages % p == 0)
    if vpp < 1 or stages % vpp:
        raise ConfigError(f"pipeline_layout has {stages} stages, not a multiple of vpp={vpp}")
    return (stages // vpp,)
