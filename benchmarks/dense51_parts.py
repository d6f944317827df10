"""Where the dense Megatron Llama rows on H100 spend their predicted step, and how much of it
rides on the sustained-clock derate (issue 17 item 2, 51st session; a diagnostic: nothing here
feeds trainsim).

    python benchmarks/dense51_parts.py            # the rows below
    python benchmarks/dense51_parts.py ROW_ID ...  # rows of the public file

For each row (as validated: tuned settings, errata applied): the error; one micro-batch's work
on the heaviest stage's layers (forward + backward of one decoder layer, and the head) split
into GEMMs, attention and the other (memory-bound) kernels as ``Pricer.compute.explain`` prices
them; the share of the step that GEMMs and attention take; and the step simulated again with
the GPU's ``sustained_of_burst`` raised to 1 (the kernels at the rate they were benchmarked at,
alone). From the two steps, the sustained fraction that would make the row exact if the clock
were the only cause (linear between the two). Rows whose fractions disagree say the clock is
not the (one) cause: the over-predicted dense Llama rows ask for ~0.9, their nemo 24.07 GPT-3
and Llama-2 70B / Bridge 405B neighbours for 0.85 or less.
"""

from __future__ import annotations

import dataclasses
import sys

from trainsim.pricing import Pricer
from trainsim.simulator import simulate
from trainsim.workload.head import head_backward, head_forward
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from layer_prices import chosen_config

DEFAULT = ("nemo2407-llama2-7b-8", "nemo2407-llama3-8b-8", "bridge2511-llama3-8b-8",
           "nemo2407-llama3-70b-64", "bridge2511-llama3-70b-64",
           "bridge2604p1-llama3-70b-h100-64-gbs256",
           # neighbours: the same frameworks and GPU, near exact or under-predicted
           "nemo2407-gpt3-5b-64", "nemo2407-llama2-70b-64", "nemo2407-llama2-13b-16",
           "bridge2604p1-llama3.1-405b-h100-1024-gbs1536")


def split(pricer: Pricer, ops: list) -> dict[str, float]:
    """Seconds of ``ops`` by kind of kernel, each priced alone (communication left out)."""
    got = {"gemm": 0.0, "attn": 0.0, "other": 0.0}
    for op in ops:
        if isinstance(op, Comm):
            continue
        t, _ = pricer.compute.explain(op)
        got["gemm" if isinstance(op, Gemm) else "attn" if isinstance(op, Attention)
            else "other"] += t
    return got


def with_sustained(cfg, frac: float):
    """``cfg`` on the same GPU but for its sustained fraction of the burst matmul rate."""
    gpu = dataclasses.replace(cfg.cluster.gpu, sustained_of_burst=frac)
    return dataclasses.replace(cfg, cluster=dataclasses.replace(cfg.cluster, gpu=gpu))


def fraction_for(cfg, measured: float) -> tuple[float, float, float]:
    """``cfg``'s step as priced, its step at the burst clock (``sustained_of_burst`` 1), and the
    sustained fraction whose step is ``measured``: kernel time taken as linear in the inverse
    of the fraction between the two (the clock-bound kernels scale as 1 / clock)."""
    base = simulate(cfg).iteration_time_s
    burst = simulate(with_sustained(cfg, 1.0)).iteration_time_s
    inv0 = 1.0 / cfg.cluster.gpu.sustained_of_burst
    if base == burst:
        return base, burst, float("nan")
    inv = 1.0 + (measured - burst) * (inv0 - 1.0) / (base - burst)
    return base, burst, (1.0 / inv if inv > 0 else float("nan"))


def row(row_id: str) -> str:
    chosen = chosen_config([row_id])
    if chosen is None:
        return f"| {row_id} | error |"
    res, cfg = chosen
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=False)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    hf = head_forward(cfg, sh)
    layer = split(pricer, lf + lb)
    attn = [op for op in lf + lb if isinstance(op, Attention)]
    attn_rate = sum(op.flops for op in attn) / layer["attn"] / 1e12 if attn else float("nan")
    models = "/".join(sorted({pricer.compute.explain(op)[1] for op in attn}))
    head = split(pricer, hf + head_backward(cfg, sh, hf))
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    base, burst, need = fraction_for(cfg, res.measured)
    lay = sum(layer.values())
    n_layers = max(cfg.stage_layer_counts)
    clock_part = (base - burst) / base
    return (f"| {row_id} | {res.measured:.3f} | {base:.3f} | {100 * (base / res.measured - 1):+.1f} "
            f"| {m} x {n_layers} | {lay * 1e3:.2f} | {100 * layer['gemm'] / lay:.0f} / "
            f"{100 * layer['attn'] / lay:.0f} / {100 * layer['other'] / lay:.0f} "
            f"| {attn_rate:.0f} {models} "
            f"| {sum(head.values()) * 1e3:.2f} | {burst:.3f} ({100 * (burst / res.measured - 1):+.1f}) "
            f"| {100 * clock_part:.1f} | {need:.3f} |")


def main(argv: list[str]) -> int:
    print("| row | measured s | predicted s | err % | micro-batches x layers | layer fwd+bwd ms "
          "| GEMM / attn / other % | attention fwd+bwd TFLOP/s | head fwd+bwd ms | step at burst clock s (err %) "
          "| step share on the clock % | sustained fraction for 0 error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row_id in argv or DEFAULT:
        print(row(row_id), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
