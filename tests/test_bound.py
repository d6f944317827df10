"""``bound.lower_bound_s`` reads each backward's duration where no pass can hold a pair's
exposed exchanges (all but the combined 1F1B): the same value, to the bit, as summing every
backward's own segments out of the full pass list (bound45, issue 21 item 3)."""

from __future__ import annotations

import random

from helpers import random_config

from trainsim import run_config_from_dict
from trainsim.bound import SAFETY, lower_bound_s
from trainsim.ep_pairs import own_segments
from trainsim.errors import ConfigError
from trainsim.pricing import Priced, Pricer
from trainsim.validate import BUNDLED_DIR, read_rows
from trainsim.validate.training import row_config
from trainsim.workload.schedule import combined_1f1b


def _every_own_segment(cfg) -> float:
    """The bound as main had it before bound45: every backward's own segments summed."""
    from trainsim.simulator import _TaskGraph

    p = cfg.parallel
    if p.pipeline_schedule not in (None, "1f1b", "interleaved_1f1b") or \
            p.optimizer_post_validation:
        return 0.0
    graph = _TaskGraph(cfg, Pricer(cfg), None)
    pp, vpp, m = p.pp, p.vpp, cfg.num_microbatches
    nv = pp * vpp
    send = graph.send.duration_s
    folded, own = (0.0, send) if graph.sends_overlap else (send, 0.0)
    f_on = [graph.work[v][0].duration_s + (folded if v < nv - 1 else 0.0) for v in range(nv)]
    b_on = [sum(seg[1] for seg in own_segments(graph.work[v][1])) + (folded if v > 0 else 0.0)
            for v in range(nv)]
    f_sent = [own if v < nv - 1 else 0.0 for v in range(nv)]
    b_sent = [own if v > 0 else 0.0 for v in range(nv)]
    step = [x.duration_s if isinstance(x, Priced) else x
            for x in (graph.optimizer_step(s) for s in range(pp))]
    best = 0.0
    for s in range(pp):
        fill = sum(f_on[u] + f_sent[u] for u in range(s))
        busy = m * sum(f_on[v] + b_on[v] for v in range(s, nv, pp))
        drain = b_sent[s] + sum(b_on[u] + b_sent[u] for u in range(s)) + step[0]
        best = max(best, fill + busy + max(drain, step[s]))
    return SAFETY * best


def _configs() -> list:
    """Random configs (dense and MoE, every ZeRO stage, sends blocking or overlapped), every
    public row's untuned config that builds, and the combined 1F1B's dense-then-MoE pipeline."""
    from test_combined_1f1b import _dense_then_moe

    rng = random.Random(45)
    out = []
    while len(out) < 40:
        try:
            out.append(run_config_from_dict(random_config(rng)))
        except ConfigError:
            continue
    for row in read_rows(BUNDLED_DIR / "training_public.csv")[1]:
        try:
            out.append(row_config(row, compute_db=None))
        except (ConfigError, ValueError, KeyError):
            continue
    return [*out, _dense_then_moe()]


def test_the_bound_is_bit_identical_to_every_own_segment_summed():
    configs = _configs()
    assert len(configs) > 100
    assert any(combined_1f1b(c) for c in configs) and not all(combined_1f1b(c) for c in configs)
    positive = 0
    for cfg in configs:
        got, want = lower_bound_s(cfg), _every_own_segment(cfg)
        assert got.hex() == want.hex(), cfg.model.name
        positive += got > 0
    assert positive > len(configs) // 2
