"""BigScience's CUDA_LAUNCH_BLOCKING A/B on Jean Zay, split into a cost per pipeline step and a
flat cost per iteration, beside trainsim's same split (issue 17 item 2; a diagnostic, nothing
here feeds trainsim).

    python benchmarks/bloom_ab.py   # ~1 min on an idle core (12 simulations)

The data: bigscience-workshop/bigscience train/tr11-176B-ml/chronicles-prequel.md, 'dealing
with JZ hanging on the large model' (2022-02, before the 02-25 "PCI-Express/NUMA" fix and before
the TFLOPs formula changed by ~3 %): one 200B configuration (h 14400, 80 layers, 96 heads,
TP 8, PP 10, MBS 1, fp16, Megatron-DeepSpeed with DeepSpeed's pipe engine and ZeRO-1), second
iteration, in TFLOPs per GPU, with and without ``CUDA_LAUNCH_BLOCKING=1``: 80 GPUs (DP 1) at
GBS 512, 160 GPUs (DP 2) at GBS 512 and 2048. Seconds from Megatron-DeepSpeed's formula
``96 B s l h^2 (1 + s/6h + V/16lh)`` over the GPUs (a uniform factor, if the older formula ran,
cancels in every ratio below).

1. Measured: at DP 2 the two batches give, per mode, a cost per pipeline step ``c`` (steps
   ``n = m + pp - 1`` with ``m`` micro-batches a pipeline) and a flat part ``F``: ``t = F + c n``.
   At DP 1 one batch only: ``c`` for a flat part between 0 and the DP 2 one (DP 1 has no
   data-parallel traffic).
2. trainsim on the same configurations (``nic_gbit_s_per_gpu`` 50, Jean Zay's 4 x 100 Gbit/s
   Omni-Path per 8-GPU node as the public BLOOM rows give it), the same split.
3. What it says: the launch-blocking cost per step (measured at DP 1 against the model's), and
   what the async step costs at DP 2 over DP 1 (measured against the model's, which has none).

The head dim here is 14400 / 96 = 150 elements, off the 8-element tensor-core alignment, and the
model prices these runs ~27-36 % fast (25th session, dsbloom, lead); the host costs compared in
section 3 do not depend on the kernels' speed, the measured/model ratios of section 2 do.
"""

from __future__ import annotations

import sys

from trainsim import run_config_from_dict, simulate

SEQ, LAYERS, HIDDEN, HEADS, VOCAB, PP, TP = 2048, 80, 14400, 96, 250680, 10, 8
MEASURED_TFLOPS = {  # (GPUs, GBS, CUDA_LAUNCH_BLOCKING) -> TFLOPs per GPU, chronicles-prequel.md
    (80, 512, True): 91.04, (80, 512, False): 97.20,
    (160, 512, True): 84.59, (160, 512, False): 84.44,
    (160, 2048, True): 90.29, (160, 2048, False): 90.25,
}
NIC_GBIT_S = 50.0
"""Jean Zay's A100 nodes: 4 x 100 Gbit/s Omni-Path for 8 GPUs (the public BLOOM rows' cell)."""


def measured_s(gpus: int, gbs: int, blocking: bool) -> float:
    """The iteration's seconds from its TFLOPs per GPU (Megatron-DeepSpeed's formula)."""
    flops = (96 * gbs * SEQ * LAYERS * HIDDEN**2
             * (1 + SEQ / (6 * HIDDEN) + VOCAB / (16 * LAYERS * HIDDEN)))
    return flops / gpus / (MEASURED_TFLOPS[(gpus, gbs, blocking)] * 1e12)


def steps(gpus: int, gbs: int, mb: int = 1) -> int:
    """Pipeline steps on the critical stage: micro-batches a pipeline + PP - 1."""
    dp = gpus // (TP * PP)
    return gbs // (mb * dp) + PP - 1


def split(t1: float, n1: int, t2: float, n2: int) -> tuple[float, float]:
    """(flat s, s per step) of ``t = F + c n`` through two (time, steps) points."""
    c = (t2 - t1) / (n2 - n1)
    return t1 - c * n1, c


def per_step_bounds(t: float, n: int, flat_hi: float) -> tuple[float, float]:
    """(low, high) cost per step of one run whose flat part lies in [0, flat_hi]."""
    return (t - flat_hi) / n, t / n


def predicted(gpus: int, gbs: int, blocking: bool):
    """trainsim's Result for one configuration of the A/B."""
    raw = {"model": {"name": "bs-200b-h14400", "hidden_size": HIDDEN, "num_layers": LAYERS,
                     "num_attention_heads": HEADS, "ffn_hidden_size": 4 * HIDDEN,
                     "vocab_size": VOCAB, "activation": "gelu"},
           "parallel": {"tp": TP, "pp": PP, "recompute": "full", "zero_stage": 1},
           "training": {"global_batch_size": gbs, "micro_batch_size": 1, "seq_length": SEQ,
                        "dtype": "fp16", "attention": "unfused",
                        "framework": "megatron-deepspeed", "framework_version": "2022-02",
                        "cuda_launch_blocking": blocking},
           "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": gpus, "gpus_per_node": 8,
                       "nic_gbit_s_per_gpu": NIC_GBIT_S}}
    return simulate(run_config_from_dict(raw))


def predicted_s(gpus: int, gbs: int, blocking: bool) -> float:
    return predicted(gpus, gbs, blocking).iteration_time_s


def table(time_of) -> dict[str, float]:
    """The split of section 1 for ``time_of(gpus, gbs, blocking)``: per mode the DP 2 flat part
    and step cost, the DP 1 step cost bounds (flat part in [0, DP 2's])."""
    out: dict[str, float] = {}
    for blocking, tag in ((False, "async"), (True, "blocked")):
        flat, c = split(time_of(160, 512, blocking), steps(160, 512),
                        time_of(160, 2048, blocking), steps(160, 2048))
        lo, hi = per_step_bounds(time_of(80, 512, blocking), steps(80, 512), max(flat, 0.0))
        out |= {f"{tag} F dp2": flat, f"{tag} c dp2": c, f"{tag} c dp1 lo": lo,
                f"{tag} c dp1 hi": hi}
    return out


def main() -> int:
    print("1. BigScience's launch-blocking A/B, 200B TP8 PP10 MBS 1 (seconds from TFLOPs)")
    print(f"{'GPUs':>5} {'GBS':>5} {'steps':>6} {'async s':>9} {'blocked s':>10} {'blocked/async':>14}"
          f" {'model async':>12} {'model blocked':>14} {'model b/a':>10}")
    pred = {k[:3]: predicted_s(*k) for k in MEASURED_TFLOPS}
    for gpus, gbs in ((80, 512), (160, 512), (160, 2048)):
        a, b = measured_s(gpus, gbs, False), measured_s(gpus, gbs, True)
        pa, pb = pred[(gpus, gbs, False)], pred[(gpus, gbs, True)]
        print(f"{gpus:>5} {gbs:>5} {steps(gpus, gbs):>6} {a:>9.1f} {b:>10.1f} {b / a - 1:>+14.1%}"
              f" {pa:>12.1f} {pb:>14.1f} {pb / pa - 1:>+10.1%}")
    meas, model = table(measured_s), table(lambda g, b, bl: pred[(g, b, bl)])
    print("\n2. t = F + c x steps (c in ms a step; DP 1: c for a flat part in [0, DP 2's F])")
    print(f"{'':>22} {'measured':>10} {'model':>8} {'measured/model':>15}")
    for k in meas:
        unit, scale = ("s", 1.0) if " F " in k else ("ms", 1e3)
        ratio = f"{meas[k] / model[k]:>15.3f}" if unit == "ms" else ""
        print(f"{k + ' (' + unit + ')':>22} {meas[k] * scale:>10.1f} {model[k] * scale:>8.1f} {ratio}")
    pen_lo = meas["blocked c dp1 lo"] - meas["async c dp1 lo"]
    pen_hi = meas["blocked c dp1 hi"] - meas["async c dp1 hi"]
    pen_model = model["blocked c dp1 hi"] - model["async c dp1 hi"]
    dp2_pen = meas["blocked c dp2"] - meas["async c dp2"]
    excess = (meas["async c dp2"] - meas["async c dp1 hi"], meas["async c dp2"] - meas["async c dp1 lo"])
    model_excess = model["async c dp2"] - model["async c dp1 hi"]
    print("\n3. Per pipeline step (ms)")
    print(f"   launch blocking at DP 1: measured {pen_hi * 1e3:.1f}..{pen_lo * 1e3:.1f} (same flat part"
          f" both modes), model {pen_model * 1e3:.1f}")
    print(f"   launch blocking at DP 2: measured {dp2_pen * 1e3:+.1f}, model"
          f" {(model['blocked c dp2'] - model['async c dp2']) * 1e3:.1f}")
    print(f"   async step at DP 2 over DP 1: measured {excess[0] * 1e3:+.1f}..{excess[1] * 1e3:+.1f},"
          f" model {model_excess * 1e3:+.1f}")
    print(f"   blocked step at DP 2 over DP 1: measured"
          f" {(meas['blocked c dp2'] - meas['blocked c dp1 hi']) * 1e3:+.1f}.."
          f"{(meas['blocked c dp2'] - meas['blocked c dp1 lo']) * 1e3:+.1f},"
          f" model {(model['blocked c dp2'] - model['blocked c dp1 hi']) * 1e3:+.1f}")
    dp_exposed = predicted(160, 2048, True).exposed_comm["dp"]
    print(f"   flat part at DP 2 (s): measured {meas['blocked F dp2']:.1f}, model"
          f" {model['blocked F dp2']:.1f} (its exposed data-parallel time"
          f" {dp_exposed:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
