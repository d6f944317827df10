"""An iteration whose loop runs the pipeline schedule more than once
(``training.local_batch_size``, ``RunConfig.schedule_steps``): one step simulated, repeated.

NeMo Automodel's benchmark loop (recipes/llm/benchmark.py @ 89e3a9fd) calls the pipeline
schedule's ``step`` once per local batch, so each local batch fills and drains the pipeline on
its own and reduces its gradients; the optimizer runs once per iteration. The loop waits for
each step: it reads ``.item()`` of the next batch's label count before it issues the step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from trainsim.chunks import LayerSource
from trainsim.config import RunConfig
from trainsim.pricing import Pricer
from trainsim.result import Result

OneRun = Callable[[RunConfig, bool, "LayerSource | None", "Pricer | None"], Result]


def one_step(cfg: RunConfig) -> RunConfig:
    """The config of one schedule step: the rank's local batch as its whole batch."""
    t = cfg.training
    return replace(cfg, training=replace(
        t, global_batch_size=t.global_batch_size // cfg.schedule_steps))


def in_steps(cfg: RunConfig, keep_timeline: bool, layer_source: LayerSource | None,
             pricer: Pricer | None, simulate_one: OneRun) -> Result:
    """``cfg``'s iteration as ``cfg.schedule_steps`` (n) schedule steps back to back: one step
    simulated by ``simulate_one`` (its own fill and drain, gradient reductions and memory),
    every time but the optimizer's counted n times, the optimizer once. ``pricer`` (built for
    ``cfg``) prices the step's passes: a pass's price depends on the parallel layout, the
    cluster and the micro-batch, which the step shares with ``cfg``. The timeline, where one is
    kept, is one step's (ending with the optimizer); ``simulation["schedule_steps"]`` says n."""
    n = cfg.schedule_steps
    r = simulate_one(one_step(cfg), keep_timeline, layer_source, pricer)
    opt = r.breakdown.get("optimizer_s", 0.0)
    breakdown = {k: v if k == "optimizer_s" else v * n for k, v in r.breakdown.items()}
    simulation = dict(r.simulation, schedule_steps=n)
    if keep_timeline:
        simulation["timeline"] = (f"one of the iteration's {n} pipeline schedule steps "
                                  "(training.local_batch_size); the iteration repeats it back to "
                                  "back and runs the optimizer once")
    return replace(r, config=cfg, iteration_time_s=n * (r.iteration_time_s - opt) + opt,
                   breakdown=breakdown, exposed_comm={k: v * n for k, v in r.exposed_comm.items()},
                   model_flops=r.model_flops * n, hardware_flops=r.hardware_flops * n,
                   simulation=simulation)


__all__ = ["in_steps", "one_step"]
