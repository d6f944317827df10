"""The busiest expert-parallel rank of a benchmark run whose router draws random scores.

Megatron-core's forced load balance (``moe_router_force_load_balancing``, set by
Megatron-Bridge's performance recipes: ``moe_router.force_balance_op``) replaces the router's
logits by ``RandomSTE``: ``logits.clone().normal_()``, independent standard normals per token
and expert, before the top-k (megatron/core/transformer/moe/router.py ``TopKRouter.forward``,
core_v0.15.0 L554-556; moe_utils.py ``RandomSTE.forward``, core_v0.15.0 L907-922, a generator
seeded 42 + global rank, so every rank draws its own; core_v0.16.0 L1119-1131, under the
expert-parallel RNG tracker). The top k of independent, identically distributed scores are a
uniformly random k-subset of the E experts, drawn afresh for every token, layer and
micro-batch. The load is balanced only in expectation:

* A rank holding ``L = E / ep`` experts receives from each routed token a hypergeometric number
  of copies (k draws from E, L of them its own): mean ``k L / E``, variance
  ``k (L/E) (1 - L/E) (E - k) / (E - 1)``.
* The EP group routes ``T = ep x etp x t`` tokens (``t`` on each rank), independently, so a
  rank's load is close to normal with relative standard deviation
  ``s = sqrt(T var) / (T mean)``.
* The ``ep`` loads sum to ``T k``: equicorrelated, correlation ``-1 / (ep - 1)``. Such loads are
  ``sd sqrt(ep / (ep - 1)) (Z_i - mean(Z))`` for independent standard normals ``Z_i``, so the
  busiest rank carries, in expectation, ``1 + s sqrt(ep / (ep - 1)) z(ep)`` times the mean,
  ``z(n)`` the expected largest of n independent standard normals (``expected_max_normal``).

The expert GEMMs of that rank and every all-to-all that waits for its copies run at that
load: the dispatch finishes when the busiest receiver has its copies, the combine when it has
sent them back, and the next layer waits for both. Pure statistics of the source's sampling;
nothing fitted. ``workload.moe_block`` scales the experts' rows by it for every dispatcher and
the NCCL all-to-all's exchanges (the ``alltoall`` dispatcher's tokens and probabilities) by it;
DeepEP's and HybridEP's exchanges send one copy per remote NVLink domain, whose domain-level
loads vary less and are not derived here, so they keep the mean. Not applied to NeMo
Automodel's deterministic ``fake_balanced`` gate (every expert equally loaded). Memory keeps the
mean load (``memory.estimate``).

Group-limited routing (``moe_router_group_topk``; Megatron-core ``group_limited_topk`` in
moe_utils.py: the groups with the largest sums of their top ``k / group_topk`` scores, then the
top k inside them) still gives every expert a copy with probability ``k / E`` (the scores are
exchangeable), but a rank's count is no longer hypergeometric: it gets none where its group is
not chosen, and ranks of one group rise and fall together. The uniform formula is used there
as an approximation: within the draws' noise where a group spans many ranks, 10-30 % of the
excess low where it spans one or two. Seeded Monte Carlo draws of that routing on random normal
scores (busiest/mean +- standard error, formula in brackets): 256 experts, 8 groups, 4 chosen,
top 8, EP 64, 4,096 tokens a rank: 1.0125 +- 0.0003 (1.0128); 160 experts, 8 groups, 3 chosen,
top 6, 256 tokens a rank, EP 16: 1.053 +- 0.001 (1.044), EP 8 (a group a rank): 1.049 +- 0.001
(1.036); 64 experts, 8 groups, 4 chosen, top 8, 256 tokens, EP 8: 1.040 +- 0.001 (1.030). The
mean load (1.0) is further off every time.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import TYPE_CHECKING

from trainsim.workload.moe_router import force_balance_op

if TYPE_CHECKING:
    from trainsim.config import RunConfig

_QUAD_STEPS = 4000
"""Trapezoid steps of ``expected_max_normal`` over [-10, 10] standard deviations (exact to
~1e-9 for any n up to 10^5; a quadrature setting, not a model constant)."""


@functools.cache
def expected_max_normal(n: int) -> float:
    """Expected largest of ``n`` independent standard normals:
    ``integral of x n phi(x) Phi(x)^(n-1) dx`` (0 for n = 1; 1/sqrt(pi) for n = 2)."""
    if n < 2:
        return 0.0
    std = NormalDist()
    lo, hi = -10.0, 10.0
    h = (hi - lo) / _QUAD_STEPS
    total = 0.0
    for i in range(_QUAD_STEPS + 1):
        x = lo + i * h
        f = x * n * std.pdf(x) * std.cdf(x) ** (n - 1)
        total += f * (0.5 if i in (0, _QUAD_STEPS) else 1.0)
    return total * h


def busiest_rank_load(experts: int, topk: int, ep: int, tokens: int) -> float:
    """Expected token copies on the busiest of ``ep`` ranks over the mean, when each of
    ``tokens`` tokens (the whole EP group's) sends its copies to a uniformly random
    ``topk``-subset of ``experts`` experts spread evenly over the ranks (module docstring)."""
    if ep < 2 or tokens < 1 or topk >= experts:
        return 1.0
    frac = (experts // ep) / experts
    mean = topk * frac
    var = topk * frac * (1 - frac) * (experts - topk) / (experts - 1)
    rel_sd = math.sqrt(tokens * var) / (tokens * mean)
    return 1.0 + rel_sd * math.sqrt(ep / (ep - 1)) * expected_max_normal(ep)


def sampled_imbalance(cfg: RunConfig, tokens: int, exchange: bool = False) -> float:
    """The busiest EP rank's load over the mean for a rank that routes ``tokens`` tokens, where
    the run's router draws random scores (a forced-balance run, dropless, learned router;
    group-limited routing approximated as uniform, module docstring); 1.0 otherwise. The experts' rows count the tokens of all
    ``ep x etp`` ranks; one all-to-all (``exchange``) only those of its ``ep`` ranks: the
    ``alltoall`` dispatcher exchanges within the EP group, then all-gathers over the expert-TP
    group (core_v0.16.0 token_dispatcher.py MoEAlltoAllTokenDispatcher, ``all_to_all`` on
    ``ep_group`` L666-671, ``gather_from_sequence_parallel_region`` on ``expt_tp`` L691-701),
    so under ETP its exchange varies ``sqrt(etp)`` times more than the rows."""
    m, p = cfg.model, cfg.parallel
    experts = m.num_experts or 1
    if p.ep < 2 or m.moe_router != "learned":
        return 1.0
    if force_balance_op(cfg, tokens, experts) is None:
        return 1.0
    routed = p.ep * tokens * (1 if exchange else p.etp)
    return busiest_rank_load(experts, m.moe_router_topk, p.ep, routed)
