"""Physical-sanity sweep (22nd session, sanity; issue 17): valid runs drawn across models, GPUs,
framework profiles (with and without versions) and parallel layouts, checked against invariants
that hold for any real training run. The fuzz sweeps (``fuzz_sweep*.py``) hunt crashes; this
one hunts wrong answers on valid inputs.

Invariants (each violation is printed with its config; ``ALLOW`` names the behaviour the sweep
accepts and the source that explains it):

- ``floor_flops``: iteration time >= model FLOPs / (GPUs x peak FLOP/s of the dtype) / MFU_CEILING
  (no run reaches more than MFU_CEILING of the datasheet peak).
- ``floor_dp``: iteration time >= the bytes a node must send over its NICs for the gradient
  reduction when the data-parallel group spans nodes. NCCL runs one ring channel per rail, so
  a node's k members of the group (``group_span``) send over k NICs together: each channel's
  ring sends (dp-1)/dp of its 1/k of the gradient shard out of the node once (reduce-scatter,
  or the first half of a ring all-reduce), i.e. (dp-1)/dp x shard / (k x per-GPU NIC rate);
  with in-network reduction (SHARP) the node still sends its whole shard once over the k NICs.
  (benchmarks/collectives_published.csv nccl812-dgxa100x16-allreduce-ring: 192 GB/s bus bandwidth on
  8 x 200 Gb/s NICs per node, i.e. the node's 8 NICs, not one.)
- ``balance``: breakdown entries >= 0 and summing to the iteration time.
- ``memory_floor``: the largest rank's weights+gradients+optimizer >= 12 bytes x parameters /
  GPUs (Adam's fp32 master, m and v exist once per parameter somewhere, whatever the sharding).
- ``gpu_dominance``: the same run on a GPU at least as fast in every rate (h100 -> h200 same
  clocks, more HBM bandwidth; h100 -> b200) is not more than DOMINANCE_TOL slower.
- ``batch``: doubling the global batch (more accumulation steps) never shortens the iteration
  and at least ~doubles compute (compute_s x >= BATCH_COMPUTE_MIN).
- ``recompute``: none <= selective <= full (recompute only adds work), within RECOMPUTE_TOL.
- ``version``: a framework version change moves the time by less than VERSION_SPREAD x.
- ``framework``: the profiles on the same run stay within FRAMEWORK_SPREAD x of each other.
- ``micro_memory``: twice the micro-batch at the same global batch never lowers a stage's
  allocated peak, but by the gradients a loop that frees them after each step no longer holds
  at the loss of a step of one micro-batch (``check_micro``).
- ``depth``: one more layer per model chunk never shortens the iteration.

    python benchmarks/sanity_sweep.py [--seed 0] [--n 2000] [--only floors,gpu,batch,recompute,version,framework,micro,depth]

Exit 1 on a violation not in ``ALLOW``.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import math
import random
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

from trainsim.catalog import run_config_from_dict
from trainsim.catalog.frameworks import profile_supports
from trainsim.collectives.nccl import group_span
from trainsim.errors import ConfigError
from trainsim.model.counts import total_params
from trainsim.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "src" / "trainsim" / "catalog"
FRAMEWORKS = sorted(p.stem for p in (CATALOG / "frameworks").glob("*.yaml"))

MFU_CEILING = 0.9
"""No published run exceeds ~0.75 of the bf16 datasheet peak (MAMF of H100 SXM is 0.80 of it,
ml-engineering's table in catalog/gpus/h100-sxm-80gb.yaml); 0.9 leaves room for rounding."""
DOMINANCE_TOL = 1.05
BATCH_COMPUTE_MIN = 1.5
"""compute_s is a per-micro-batch part that doubles plus a per-iteration part that does not
(e.g. Mixtral 8x7B TP8/EP4 on MI300X x32: 0.2908, 0.5510, 1.0714, 2.1121 s at batch 16..128,
increments exactly linear, 0.03 s fixed); 1.5 flags a per-micro-batch part that does not scale."""
RECOMPUTE_TOL = 1.02
VERSION_SPREAD = 2.0
FRAMEWORK_SPREAD = 2.5

DENSE = ["llama3.2-1b", "llama3-8b", "qwen3-0.6b", "qwen2.5-7b", "gemma-2-2b", "mpt-7b",
         "falcon-7b", "pythia-1b", "phi-3-mini", "mistral-7b", "llama2-13b", "gpt3-5b"]
MOE = ["mixtral-8x7b", "deepseek-v2-lite", "olmoe-1b-7b", "qwen3-30b-a3b", "moonlight-16b-a3b",
       "gpt-oss-20b"]
GPUS = ["h100", "h200-sxm-141gb", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x", "mi355x",
        "h800-sxm-80gb", "gb200"]

ALLOW: dict[str, str] = {
    "framework_fsdp_accum": "ZeRO-3/FSDP gathers every unit in each micro-batch's forward "
    "and backward and reduce-scatters each backward, in the profiles FSDP_ACCUM_SOURCES cites "
    "(torchtitan, llm-foundry); across nodes at a small compute per micro-batch the NIC "
    "bounds the step",
    "framework_attention": "the slow profile runs unfused attention (Megatron-DeepSpeed's "
    "default without --use-flash-attn-v2; Megatron-LM/-core before TE/flash attention): "
    "O(s^2) HBM traffic at 4-8k tokens",
    "framework_optimizer": "Composer's DecoupledAdamW (llm-foundry) steps tensor by tensor "
    "in Python with an .item() each (per_tensor_optimizer, llm-foundry.yaml: composer/optim/"
    "decoupled_weight_decay.py): MoE models with thousands of expert tensors are launch-bound",
    "framework_host": "at least half the spread is host launch time (other_s, and the "
    "pipeline bubble it lengthens). Eager profiles (pytorch, torchtitan without compile/graphs) "
    "launch every unfused op from Python (compute/host.py HOST_S_PER_KERNEL); Megatron-Bridge's "
    "gpt-oss GLU syncs the stream each call (glu_offset_host_sync, megatron-bridge.yaml: "
    "megatron/core/fusions/fused_bias_geglu.py at the pinned Megatron-LM commits), so the host "
    "cannot run ahead; small models (0.6-2B) at TP>1 are launch-bound",
    "version_attention": "an old release runs unfused attention (see framework_attention)",
    "version_host": "an old release launches more kernels from the host (see framework_host)",
    "framework_fsdp_pp": "NeMo AutoModel under PP with FSDP2 reduce-scatters and re-gathers its "
    "units every micro-batch (fsdp_pp_sync_every_microbatch, automodel.yaml: components/moe/"
    "parallelizer.py @ 89e3a9fd; torch pipelining stage.py backward_maybe_with_nosync)",
}
"""Violation class -> why it is real behaviour (with the source)."""


def draw(rng: random.Random, frameworks: list[str] | None = None) -> dict:
    """A valid run most of the time: sizes that tile 8-GPU nodes, EP on MoE models only; its
    framework one of ``frameworks`` (default: every profile, ``FRAMEWORKS``)."""
    moe = rng.random() < 0.35
    model = rng.choice(MOE if moe else DENSE)
    par: dict[str, Any] = {"tp": rng.choice([1, 2, 4, 8]), "pp": rng.choice([1, 1, 2, 4]),
                           "cp": rng.choice([1, 1, 1, 2])}
    dp = rng.choice([1, 2, 4, 8, 16])
    if par["pp"] > 1 and rng.random() < 0.4:
        par["vpp"] = 2
    if moe:
        par["ep"] = rng.choice([1, 2, 4, 8])
        while par["ep"] > dp * par["cp"] and par["ep"] > 1:
            par["ep"] //= 2
    if rng.random() < 0.4:
        par["zero_stage"] = rng.choice([0, 1, 2, 3])
        if par["zero_stage"] == 3 and rng.random() < 0.4 and dp >= 4:
            par["dp_replicate"] = 2
    if par["tp"] > 1:
        par["sequence_parallel"] = rng.random() < 0.7
    if rng.random() < 0.3:
        par["recompute"] = rng.choice(["none", "selective", "full"])
    tr: dict[str, Any] = {"global_batch_size": dp * rng.choice([4, 8, 16]),
                          "micro_batch_size": rng.choice([1, 1, 2]),
                          "seq_length": rng.choice([2048, 4096, 8192]),
                          "framework": rng.choice(frameworks or FRAMEWORKS)}
    if rng.random() < 0.2:
        tr["dtype"] = "fp8"
    gpus = par["tp"] * par["pp"] * par["cp"] * dp
    gpu = rng.choice(GPUS)
    cluster: dict[str, Any] = {"gpu": gpu, "num_gpus": gpus}
    if gpu == "gb200":
        cluster["gpus_per_node"] = 4 if gpus % 4 == 0 else gpus
    elif gpus < 8:
        cluster["gpus_per_node"] = gpus
    return {"model": model, "parallel": par, "training": tr, "cluster": cluster}


def run(cfg: dict):
    """The result of a raw config, or None where trainsim refuses it (a clean ConfigError)."""
    try:
        return simulate(run_config_from_dict(copy.deepcopy(cfg)))
    except (ConfigError, ValueError):
        return None


def with_(cfg: dict, section: str, **kw: Any) -> dict:
    out = copy.deepcopy(cfg)
    out[section].update(kw)
    return out


def short(cfg: dict) -> str:
    p, t, c = cfg["parallel"], cfg["training"], cfg["cluster"]
    return (f"{cfg['model']} {c['gpu']}x{c['num_gpus']} {t['framework']}"
            f"{'@' + t['framework_version'] if t.get('framework_version') else ''} "
            f"{' '.join(f'{k}={v}' for k, v in p.items())} gbs={t['global_batch_size']} "
            f"mbs={t['micro_batch_size']} seq={t['seq_length']} {t.get('dtype', '')}")


# ------------------------------------------------------------------------------ checks

def check_floors(cfg: dict, r) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    rc = r.config
    t = r.iteration_time_s
    total = sum(r.breakdown.values())
    if any(v < 0 for v in r.breakdown.values()) or not math.isclose(total, t, rel_tol=1e-9):
        out.append(("balance", f"breakdown {r.breakdown} vs {t}"))
    floor = r.model_flops / (r.num_gpus * r.peak_flops) / MFU_CEILING
    if t < floor:
        out.append(("floor_flops", f"t={t:.4g}s < {floor:.4g}s (MFU {r.mfu:.2f})"))
    n = total_params(rc.model)
    if not r.config.parallel.cpu_offloading_num_layers:
        states = max(m.weights + m.gradients + m.optimizer for m in r.memory)
        # Adam: fp32 master + two fp32 moments; a profile that casts the model to 16 bits
        # before sharding (params_16bit: AutoModel, memory/state.py) keeps all three in 16 bits
        need = (6 if profile_supports(rc, "params_16bit") else 12) * n / r.num_gpus
        if states < need * 0.98:
            out.append(("memory_floor", f"states {states / 2**30:.2f} GiB < {need / 2**30:.2f}"))
    out.extend(_dp_floor(rc, r, n))
    return out


def _dp_floor(rc, r, n: int) -> list[tuple[str, str]]:
    p, c = rc.parallel, rc.cluster
    dp = r.num_gpus // (p.tp * p.pp * p.cp)
    if dp <= 1 or c.num_gpus <= c.gpus_per_node or rc.model.num_experts:
        return []
    # Megatron's rank order (tp, cp, dp, pp): DP members sit tp x cp apart
    span = group_span(dp, p.tp * p.cp, c.gpus_per_node)
    if span.nodes <= 1:
        return []
    shard = n / (p.tp * p.pp) * 2  # bf16 gradients at the least
    # one ring channel per rail: the group's GPUs on a node share the reduction over their NICs
    need = (dp - 1) / dp * shard / (c.nic_bw_Bps * c.nics_per_gpu * span.per_node)
    if r.iteration_time_s < need:
        return [("floor_dp", f"t={r.iteration_time_s:.4g}s < node-NIC floor {need:.4g}s")]
    return []


def check_gpu(cfg: dict, r) -> list[tuple[str, str]]:
    out = []
    if cfg["cluster"]["gpu"] != "h100" or "gpus_per_node" in cfg["cluster"]:
        return out
    for better in ("h200-sxm-141gb", "b200-sxm-180gb"):
        rb = run(with_(cfg, "cluster", gpu=better))
        if rb and rb.iteration_time_s > r.iteration_time_s * DOMINANCE_TOL:
            out.append(("gpu_dominance", (f"{better} {rb.iteration_time_s:.4g}s > h100 "
                                          f"{r.iteration_time_s:.4g}s ({_diff(r, rb)})")))
    return out


def check_batch(cfg: dict, r) -> list[tuple[str, str]]:
    r2 = run(with_(cfg, "training", global_batch_size=2 * cfg["training"]["global_batch_size"]))
    if r2 is None:
        return []
    out = []
    if r2.iteration_time_s < r.iteration_time_s:
        out.append(("batch_shorter", (f"2x batch {r2.iteration_time_s:.4g}s < "
                                      f"{r.iteration_time_s:.4g}s ({_diff(r, r2)})")))
    c1, c2 = r.breakdown.get("compute_s", 0), r2.breakdown.get("compute_s", 0)
    if c2 < BATCH_COMPUTE_MIN * c1:
        out.append(("batch_compute", f"compute {c1:.4g}s -> {c2:.4g}s at 2x batch"))
    return out


def check_recompute(cfg: dict, _r) -> list[tuple[str, str]]:
    times = {}
    for mode in ("none", "selective", "full"):
        rr = run(with_(cfg, "parallel", recompute=mode))
        if rr is not None:
            times[mode] = rr
    out = []
    order = [m for m in ("none", "selective", "full") if m in times]
    for a, b in itertools.pairwise(order):
        if times[b].iteration_time_s * RECOMPUTE_TOL < times[a].iteration_time_s:
            slow, fast = times[a], times[b]
            out.append(("recompute", (f"{b} {fast.iteration_time_s:.4g}s < {a} "
                                      f"{slow.iteration_time_s:.4g}s ({_diff(slow, fast)})")))
    return out


def check_micro(cfg: dict, r) -> list[tuple[str, str]]:
    """Twice the micro-batch at the same global batch: each stage's allocated peak never falls.
    A micro-batch's activations grow with its sequences, the micro-batches 1F1B holds in flight
    fall at most as fast (min(pp - stage, n) x micro = min((pp - stage) x micro, sequences per
    rank)), and the step's buffers do not depend on it. One exception, by the gradients alone: a
    loop that frees its gradients after each step (``zero_grad(set_to_none=True)``, profile
    feature ``grads_set_to_none``) holds none at the loss of a step of one micro-batch without
    a pipeline, where the accumulating step held all of them there (mech63;
    ``memory.estimate._grads_at_backward``); every other part must still not fall."""
    t = cfg["training"]
    r2 = run(with_(cfg, "training", micro_batch_size=2 * t["micro_batch_size"]))
    if r2 is None:
        return []
    freed = _grads_freed_at_loss(r2.config)
    out = []
    for s, (a, b) in enumerate(zip(r.memory, r2.memory, strict=True)):
        spared = max(a.gradients - b.gradients, 0.0) if freed else 0.0
        if b.allocated + spared < a.allocated * (1 - 1e-9):
            out.append(("micro_memory", (f"stage {s}: micro {2 * t['micro_batch_size']} "
                                         f"{b.allocated / 2**30:.3f} GiB < micro "
                                         f"{t['micro_batch_size']} {a.allocated / 2**30:.3f} GiB "
                                         f"(activations {a.activations / 2**30:.3f} -> "
                                         f"{b.activations / 2**30:.3f}, buffers "
                                         f"{a.buffers / 2**30:.3f} -> {b.buffers / 2**30:.3f})")))
    return out


def _grads_freed_at_loss(rc) -> bool:
    """Whether a run's backward peak holds no gradient: gradients freed after each step, one
    micro-batch, no pipeline (the condition of ``memory.estimate._grads_at_backward``)."""
    return (bool(profile_supports(rc, "grads_set_to_none")) and rc.parallel.pp == 1
            and rc.schedule_microbatches == 1)


def check_depth(cfg: dict, r) -> list[tuple[str, str]]:
    """More layers (one more per model chunk, so the pipeline split stays even) never shorten
    the iteration: every added layer adds its passes, its gradients and its optimizer step."""
    p = cfg["parallel"]
    more = r.config.model.num_layers + p.get("pp", 1) * p.get("vpp", 1)
    deeper = copy.deepcopy(cfg)
    deeper["model"] = {"preset": cfg["model"], "num_layers": more}
    r2 = run(deeper)
    if r2 is None or r2.iteration_time_s >= r.iteration_time_s * (1 - 1e-9):
        return []
    return [("depth", (f"{more} layers {r2.iteration_time_s:.6g}s < "
                       f"{r.config.model.num_layers} {r.iteration_time_s:.6g}s "
                       f"({_diff(r, r2)})"))]


def _versions() -> dict[str, list[str]]:
    table = yaml.safe_load((CATALOG / "framework_releases.yaml").read_text())
    out = {}
    for name, body in table.items():
        rel = list(body.get("releases", {}))
        out[name] = [rel[0], rel[len(rel) // 2], rel[-1]] if rel else []
    return out


VERSIONS = _versions()


def check_version(cfg: dict, r) -> list[tuple[str, str]]:
    fw = cfg["training"]["framework"]
    res = {"(none)": r}
    for v in VERSIONS.get(fw, []):
        rv = run(with_(cfg, "training", framework_version=v))
        if rv is not None:
            res[v] = rv
    ts = {k: v.iteration_time_s for k, v in res.items()}
    lo, hi = min(ts, key=ts.get), max(ts, key=ts.get)
    if ts[hi] > VERSION_SPREAD * ts[lo]:
        why = explain(res[lo], res[hi])
        return [(f"version{why}", (f"{fw} {lo} {ts[lo]:.4g}s vs {hi} {ts[hi]:.4g}s "
                                   f"({_diff(res[lo], res[hi])})"))]
    return []


def check_framework(cfg: dict, r) -> list[tuple[str, str]]:
    res = {}
    for fw in FRAMEWORKS:
        rf = run(with_(cfg, "training", framework=fw))
        if rf is not None:
            res[fw] = rf
    if len(res) < 2:
        return []
    ts = {k: v.iteration_time_s for k, v in res.items()}
    lo, hi = min(ts, key=ts.get), max(ts, key=ts.get)
    if ts[hi] <= FRAMEWORK_SPREAD * ts[lo]:
        return []
    why = explain(res[lo], res[hi])
    return [(f"framework{why}:{hi}", (f"{hi} {ts[hi]:.4g}s vs {lo} {ts[lo]:.4g}s "
                                      f"({_diff(res[lo], res[hi])})"))]


FSDP_ACCUM_SOURCES = {
    "torchtitan": "the train loop never calls set_requires_gradient_sync(False) over "
    "accumulation steps (only components/loss.py's lm_head; pytorch/torchtitan b5bcd76c6)",
    "llm-foundry": "Composer's ddp_sync_context returns at once unless the model is a "
    "DistributedDataParallel (composer/distributed/dist_strategy.py, mosaicml/composer "
    "0231f2663; composer/trainer/dist_strategy.py at the pinned v0.17.2), so FSDP syncs "
    "every micro-batch",
}
"""Profiles whose ZeRO-3/FSDP syncs every micro-batch by a cited source (``_fsdp_accum``)."""


def explain(lo, hi) -> str:
    """The class suffix naming the mechanism behind a spread between two results of one run
    (``ALLOW`` says why each is real), or "" where none does. A mechanism is named only where
    its part of the breakdown grew by a share of the gap: host launches (other_s, at least a
    quarter of it, with the bubble they lengthen, half), FSDP syncs (exposed DP, a quarter
    under PP, half over accumulation steps)."""
    gap = hi.iteration_time_s - lo.iteration_time_s

    def grew(key: str) -> float:
        return hi.breakdown.get(key, 0.0) - lo.breakdown.get(key, 0.0)

    if profile_supports(hi.config, "per_tensor_optimizer") and grew("optimizer_s") >= gap / 2:
        return "_optimizer"
    # a launch-bound stage also lengthens the pipeline bubble, made of stage times; the bubble
    # counts only where the host's own time grew
    host = grew("other_s")
    if host >= gap / 4 and host + max(0.0, grew("pipeline_bubble_s")) >= gap / 2:
        return "_host"
    p = hi.config.parallel
    dp = hi.exposed_comm.get("dp", 0.0) - lo.exposed_comm.get("dp", 0.0)
    if profile_supports(hi.config, "fsdp_pp_sync_every_microbatch") and p.pp > 1 and \
            p.zero_stage >= 2 and dp >= gap / 4:
        return "_fsdp_pp"
    if p.zero_stage >= 3 and lo.config.parallel.zero_stage < 3 and dp >= gap / 2 and \
            hi.config.training.framework in FSDP_ACCUM_SOURCES:
        return "_fsdp_accum"
    a_lo, a_hi = lo.config.training.attention, hi.config.training.attention
    if a_lo != a_hi and a_hi in ("unfused", "eager") and grew("compute_s") >= gap / 2:
        return "_attention"
    return ""


def _diff(a, b) -> str:
    """The breakdown entries (and exposed-comm groups) that differ most between two results."""
    keys = set(a.breakdown) | set(b.breakdown)
    d = sorted(keys, key=lambda k: -abs(b.breakdown.get(k, 0) - a.breakdown.get(k, 0)))[:2]
    parts = [f"{k} {a.breakdown.get(k, 0):.3g}->{b.breakdown.get(k, 0):.3g}" for k in d]
    g = set(a.exposed_comm) | set(b.exposed_comm)
    if g:
        k = max(g, key=lambda k: abs(b.exposed_comm.get(k, 0) - a.exposed_comm.get(k, 0)))
        parts.append(f"comm[{k}] {a.exposed_comm.get(k, 0):.3g}->{b.exposed_comm.get(k, 0):.3g}")
    return ", ".join(parts)


CHECKS = {"floors": check_floors, "gpu": check_gpu, "batch": check_batch,
          "recompute": check_recompute, "version": check_version, "framework": check_framework,
          "micro": check_micro, "depth": check_depth}
COSTLY = {"framework": 4, "version": 2, "recompute": 2}
"""Checks that simulate many variants run on every k-th drawn config only (bounded time)."""


def sweep(seed: int = 0, n: int = 60, only: list[str] | None = None,
          budget: float = 170.0, frameworks: list[str] | None = None
          ) -> tuple[dict[str, list[str]], int, int]:
    """Findings by class (each a config and why), valid configs and configs drawn (their
    frameworks among ``frameworks``, default every profile)."""
    rng = random.Random(seed)
    found: dict[str, list[str]] = defaultdict(list)
    start, valid, tries = time.monotonic(), 0, 0
    while valid < n and tries < 20 * n and time.monotonic() - start < budget:
        tries += 1
        cfg = draw(rng, frameworks)
        r = run(cfg)
        if r is None:
            continue
        valid += 1
        for name in only or list(CHECKS):
            if valid % COSTLY.get(name, 1):
                continue
            for cls, why in CHECKS[name](cfg, r):
                found[cls].append(f"{short(cfg)}: {why}")
    return found, valid, tries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n", type=int, default=2000, help="drawn configs (valid ones)")
    ap.add_argument("--only", default=",".join(CHECKS))
    ap.add_argument("--budget", type=float, default=170.0, help="seconds; stop drawing after")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    start = time.monotonic()
    found, valid, tries = sweep(args.seed, args.n, [c for c in args.only.split(",") if c],
                                args.budget)
    bad = 0
    for cls, rows in sorted(found.items()):
        allowed = ALLOW.get(cls.split(":")[0])
        tag = f"allowed ({allowed[:90]}...)" if allowed else "VIOLATION"
        bad += 0 if allowed else len(rows)
        print(f"{cls}: {len(rows)} {tag}")
        for row in rows[:3]:
            print(f"  {row}")
    print(f"{valid} valid configs of {tries} drawn, {sum(map(len, found.values()))} findings, "
          f"{bad} not allowed, {time.monotonic() - start:.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
