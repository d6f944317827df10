"""DeepSpeed 0.6.2's ZeRO-3 parameter coordinator replayed on the module trace of a Megatron-
DeepSpeed GPT model: how far ahead of its use each weight's all-gather is issued, which gathers
are issued only when their module runs (nothing to overlap them with), and which weights the
backward gathers again after its recompute, under the DeepSpeed-on-Azure recipe's limits and
under DeepSpeed's defaults (issue 17 items 2-3 diagnostics; nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/zero3_coordinator.py        # < 1 s

The rules replayed (microsoft/DeepSpeed v0.6.2, deepspeed/runtime/zero/
partitioned_param_coordinator.py; written anew here, no code copied):

- every module gets the hooks, parameterless ones too (stage3.py ``_register_hooks_recursively``);
  a module's pre-forward and pre-backward hooks call ``fetch_sub_module`` (one trace step each),
  its post-forward and post-backward hooks ``release_sub_module``;
- ``fetch_sub_module`` gathers the module's own parameters that are not available, waits for
  them, drops them from the trace's parameter queue unless a prefetch already took them
  (``__most_recent_step_id_param_fetched_for``), then pops queue entries until it has popped
  ``min(max_live - n_available, prefetch_bucket)`` elements (already gathered parameters count
  too) and gathers the popped ones that are not available (``__all_gather_params``: each adds
  its elements to ``n_available``);
- ``release_sub_module`` frees a parameter unless it is persistent or some module within
  ``max_reuse_distance`` elements of the trace ahead uses it (``__params_to_release``: the walk
  stops once more than the distance has been passed); a freed one leaves ``n_available``.

The trace: Megatron-DeepSpeed @22775707 (examples/azure/run-175b.sh, run-1t.sh;
megatron/model/transformer.py): per block the modules layer, input_layernorm, attention,
query_key_value, scale_mask_softmax, attention_dropout, dense, post_attention_layernorm, mlp,
dense_h_to_4h, dense_4h_to_h; every block checkpointed (``--checkpoint-activations``, one layer a
checkpoint), so the backward runs each block's recompute forward, then its backward in reverse.
The word and position embeddings lead; the head's tied weight is used outside any hook (left out).
Parameters under ``stage3_param_persistence_threshold`` (1e5: the recipe misspells the key,
``persitence``, so the default holds) are persistent.
"""

from __future__ import annotations

import collections
import sys
from dataclasses import dataclass, field

PERSISTENCE = 100_000
AZURE = {"max_live": 3e9, "max_reuse": 3e9, "prefetch": 5e7}
"""Megatron-DeepSpeed @22775707 examples/azure/run-175b.sh and run-1t.sh zero_optimization:
stage3_max_live_parameters 3e9, stage3_max_reuse_distance 3e9, stage3_prefetch_bucket_size 5e7."""
DEFAULTS = {"max_live": 1e9, "max_reuse": 1e9, "prefetch": 5e7}
"""DeepSpeed v0.6.2 zero/constants.py defaults of the same three keys."""

MODELS = {"175B": (12288, 49152, 96, 50304, 2048), "530B": (20480, 81920, 105, 50304, 2048)}
"""hidden, ffn hidden, layers, vocabulary, positions (GPT-3 175B; MT-NLG 530B)."""

BIG = ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h")


@dataclass(frozen=True)
class Param:
    name: str
    numel: float

    @property
    def persistent(self) -> bool:
        return self.numel < PERSISTENCE


@dataclass
class Gather:
    param: Param
    issued: int  # trace step of the fetch that issued it
    used: int = -1  # trace step of the module that first uses it after
    phase: str = ""


def block_modules(layer: int, h: int, ffn: int) -> dict[str, tuple[Param, ...]]:
    """Each module of block ``layer`` and its own parameters (``recurse=False``)."""
    def p(name: str, n: float) -> Param:
        return Param(f"{layer}.{name}", n)
    return {"layer": (), "input_layernorm": (p("ln1.w", h), p("ln1.b", h)), "attention": (),
            "query_key_value": (p("qkv.w", 3 * h * h), p("qkv.b", 3 * h)),
            "scale_mask_softmax": (), "attention_dropout": (),
            "dense": (p("dense.w", h * h), p("dense.b", h)),
            "post_attention_layernorm": (p("ln2.w", h), p("ln2.b", h)), "mlp": (),
            "dense_h_to_4h": (p("fc1.w", ffn * h), p("fc1.b", ffn)),
            "dense_4h_to_h": (p("fc2.w", h * ffn), p("fc2.b", h))}


FORWARD = ["+layer", "+input_layernorm", "-input_layernorm", "+attention", "+query_key_value",
           "-query_key_value", "+scale_mask_softmax", "-scale_mask_softmax",
           "+attention_dropout", "-attention_dropout", "+dense", "-dense", "-attention",
           "+post_attention_layernorm", "-post_attention_layernorm", "+mlp", "+dense_h_to_4h",
           "-dense_h_to_4h", "+dense_4h_to_h", "-dense_4h_to_h", "-mlp", "-layer"]
"""A block's hook events in forward order: + fetch (pre-forward), - release (post-forward)."""
BACKWARD = ["+layer", "+mlp", "+dense_4h_to_h", "-dense_4h_to_h", "+dense_h_to_4h",
            "-dense_h_to_4h", "-mlp", "+post_attention_layernorm", "-post_attention_layernorm",
            "+attention", "+dense", "-dense", "+attention_dropout", "-attention_dropout",
            "+scale_mask_softmax", "-scale_mask_softmax", "+query_key_value",
            "-query_key_value", "-attention", "+input_layernorm", "-input_layernorm", "-layer"]
"""Its backward: a module's pre-backward fetch as the gradient of its output arrives (reverse
order of the outputs), its post-backward release as the gradient reaches its input."""


def model_events(model: str, layers: int | None = None) -> list[tuple[str, tuple[Param, ...], str]]:
    """(+/- event, the module's parameters, phase) of one step: embedding, every block's
    forward, then per block from the last: recompute forward, backward."""
    h, ffn, n, vocab, pos = MODELS[model]
    n = layers or n
    emb = (Param("emb.word", vocab * h), Param("emb.pos", pos * h))
    out: list[tuple[str, tuple[Param, ...], str]] = [("+", emb, "forward"), ("-", emb, "forward")]
    blocks = [block_modules(i, h, ffn) for i in range(n)]
    for i in range(n):
        out += [(e[0], blocks[i][e[1:]], "forward") for e in FORWARD]
    for i in reversed(range(n)):
        out += [(e[0], blocks[i][e[1:]], "recompute") for e in FORWARD]
        out += [(e[0], blocks[i][e[1:]], "backward") for e in BACKWARD]
    out += [("+", emb, "backward"), ("-", emb, "backward")]
    return out


@dataclass
class Coordinator:
    """v0.6.2's bookkeeping, replayed on a recorded trace (the second step on)."""

    events: list[tuple[str, tuple[Param, ...], str]]
    max_live: float
    max_reuse: float
    prefetch: float
    order: list[tuple[Param, ...]] = field(init=False)
    queue: collections.deque = field(init=False)
    gathers: list[Gather] = field(default_factory=list)
    live_ahead: list[float] = field(default_factory=list)
    computed: list[float] = field(default_factory=list)
    """By trace step: elements of the weight whose product the step's module computes."""

    def cover(self, g: Gather) -> float:
        """Weight elements whose products the GPU computes between ``g``'s issue and its use
        (the issuing module's own included), per element ``g`` gathers: what a gather has to
        hide behind, in units of its own size (GEMM work is proportional to a weight's elements
        at a given token count; attention's score products are left out)."""
        return sum(self.computed[g.issued:g.used]) / g.param.numel

    def __post_init__(self) -> None:
        self.order = [params for sign, params, _ in self.events if sign == "+"]
        # record_parameters: each fetch step's parameters, sorted (names stand in for ds_id)
        self.queue = collections.deque((p, step) for step, params in enumerate(self.order)
                                       for p in sorted(params, key=lambda q: q.name))

    def run(self) -> Coordinator:
        state = {p: "available" if p.persistent else "released"
                 for params in self.order for p in params}
        recent: dict[Param, int] = collections.defaultdict(lambda: -10**9)
        pending: dict[Param, Gather] = {}
        available = 0.0
        step = 0

        def gather(ps: list[Param], phase: str) -> None:
            nonlocal available
            for p in ps:
                if state[p] == "released":
                    state[p] = "inflight"
                    available += p.numel
                    pending[p] = g = Gather(p, step, phase=phase)
                    self.gathers.append(g)

        for sign, params, phase in self.events:
            if sign == "+":
                self.computed.append(sum(p.numel for p in params if p.name.endswith(".w")
                                         and not p.persistent))
            if sign == "-":
                keep = self._reused(params, step)
                for p in params:
                    if not p.persistent and p not in keep and state[p] == "available":
                        state[p] = "released"
                        available -= p.numel
                continue
            gather(list(params), phase)
            for p in params:
                if state[p] == "inflight":
                    state[p] = "available"
                if p in pending:
                    g = pending.pop(p)
                    g.used, g.phase = step, phase
            own = {p for p in params if recent[p] < step}
            taken: set[Param] = set()
            while self.queue and len(taken) < len(own):
                p, used = self.queue.popleft()
                recent[p] = used
                taken.add(p)
            budget = min(self.max_live - available, self.prefetch)
            ahead: list[Param] = []
            numel = 0.0
            while self.queue and numel < budget:
                p, used = self.queue.popleft()
                recent[p] = used
                if p not in ahead:
                    ahead.append(p)
                    numel += p.numel
            gather(ahead, phase)
            if any(p.name.endswith(".w") and not p.persistent for p in params):
                # gathered (or in flight) beyond the module's own parameters as it computes
                self.live_ahead.append(available - sum(p.numel for p in params
                                                       if not p.persistent))
            step += 1
        return self

    def _reused(self, params: tuple[Param, ...], step: int) -> set[Param]:
        walked = 0.0
        found: set[Param] = set()
        for later in self.order[step:]:
            if walked > self.max_reuse:
                break
            for p in later:
                if p in params:
                    found.add(p)
                walked += p.numel
        return found


def report(model: str, limits: dict[str, float], layers: int | None = None) -> dict[str, float]:
    """Per-model, per-setting figures of the replayed step."""
    c = Coordinator(model_events(model, layers), **limits).run()
    n = layers or MODELS[model][2]
    weights = [g for g in c.gathers if not g.param.name.startswith("emb")]
    on_demand = [g for g in weights if g.used == g.issued]
    by_phase = collections.Counter(g.phase for g in weights)
    lead = [g.used - g.issued for g in weights]
    cover = [c.cover(g) for g in weights]
    total = sum(g.param.numel for g in weights)
    bare = sum(g.param.numel for g, x in zip(weights, cover) if x == 0) / total
    thin = sum(g.param.numel for g, x in zip(weights, cover) if x < 1) / total
    block = sum(p.numel for ps in block_modules(0, *MODELS[model][:2]).values() for p in ps
                if not p.persistent)
    return {"gathers_per_block": len(weights) / n,
            "backward_regathers_per_block": by_phase["backward"] / n,
            "on_demand_per_block": len(on_demand) / n,
            "mean_lead_steps": sum(lead) / len(lead),
            "bytes_no_cover": bare, "bytes_cover_below_1": thin,
            "min_ahead_blocks": min(c.live_ahead) / block,
            "mean_ahead_blocks": sum(c.live_ahead) / len(c.live_ahead) / block}


def main(argv: list[str]) -> None:
    del argv
    print("setting   model  gathers/block  bwd regathers/block  on-demand/block  "
          "lead (steps)  ahead (blocks: min / mean)  bytes with cover 0 / < 1")
    for label, limits in (("azure", AZURE), ("defaults", DEFAULTS)):
        for model in MODELS:
            r = report(model, limits)
            print(f"{label:9s} {model:5s} {r['gathers_per_block']:13.2f} "
                  f"{r['backward_regathers_per_block']:20.2f} {r['on_demand_per_block']:16.2f} "
                  f"{r['mean_lead_steps']:13.1f}  {r['min_ahead_blocks']:.2f} / "
                  f"{r['mean_ahead_blocks']:.2f}                 "
                  f"{100 * r['bytes_no_cover']:4.0f} % / {100 * r['bytes_cover_below_1']:3.0f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
