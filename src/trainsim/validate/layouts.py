"""Parallel layouts of a training row that leaves its tensor or pipeline size empty.

A published run that states only its GPU count was laid out by its authors: Megatron-LM's
``--tensor-model-parallel-size`` and ``--pipeline-model-parallel-size`` default to 1
(megatron/training/arguments.py), a default no run of a large model keeps, so an empty tp or
pp is a tuned setting, not a default. The layouts are the ones ``trainsim search`` enumerates
(``search.space.SearchSpace.memory_keys``: tp dividing the heads, the KV heads and the FFN
within a node, pp splitting the layers as the framework can, dp dividing the global batch),
restricted to the row's stated cells; the validator tunes each one's other empty cells and
keeps the fastest that fits (``validate.training``). An empty cp or ep is not a layout choice
here: cp takes Megatron's default 1 (``--context-parallel-size``), and an MoE row's ep is
already tuned with the row's other cells (``training._unknowns``).
"""

from __future__ import annotations

from typing import Any

from trainsim.catalog import run_config_from_dict
from trainsim.search.space import Base, SearchSpace

MAX_LAYOUTS = 24
"""Most (tp, pp) layouts tuned for one row, those with the fewest model-parallel ranks
(tp x pp) first (the least communication; ties: the smaller tp): each layout costs one tuning
of the row's other cells (~0.05-0.5 s), so a row stays within a few seconds. A 1,024-GPU
row of a 126-layer model has about 30 layouts; the ones left off split the model over the
most ranks."""


def parallel_layouts(raw: dict[str, Any], tp: int | None, pp: int | None, cp: int,
                     ep: int | None, micro_batch: int | None) -> list[tuple[int, int]]:
    """(tp, pp) layouts of the run ``raw`` describes (its parallel section ignored) with the
    given sizes kept, at most :data:`MAX_LAYOUTS`, in the order they are tried."""
    training = {k: v for k, v in raw["training"].items()
                if k not in ("micro_batch_size", "local_batch_size")}
    num_gpus = int(raw["cluster"]["num_gpus"])
    # one GPU: the model, batch and node as a search's Base holds them (a layout is checked
    # against num_gpus by the enumeration, not by this config)
    one = run_config_from_dict({"model": raw["model"], "training": training, "parallel": {},
                                "cluster": {**raw["cluster"], "num_gpus": 1}})
    space = SearchSpace(tp=(tp,) if tp else None, pp=(pp,) if pp else None, cp=(cp,),
                        micro_batch=(micro_batch,) if micro_batch else None,
                        recompute=("none",), sequence_parallel=(False,), zero=(0,),
                        vpp=(1,), ep=(ep,) if ep else None, schedules=("",))
    found = dict.fromkeys((k.tp, k.pp) for k in space.memory_keys(Base.of(one), num_gpus))
    return sorted(found, key=lambda tp_pp: (tp_pp[0] * tp_pp[1], tp_pp[0]))[:MAX_LAYOUTS]
