"""The MLPerf v5.1 Llama 3.1 8B rows' per-step gap, mechanism by mechanism (issue 17, 33rd
session; a diagnostic: nothing here feeds trainsim).

    PYTHONPATH=src python benchmarks/mlperf8b_step.py          # ~10 s on 2 cores
    PYTHONPATH=src python benchmarks/mlperf8b_step.py files    # part 6 on whole files, ~1 min

The 16 Llama 3.1 8B rows of ``training_mlperf5.csv`` and ``training_mlperf51_partners.csv``
(NeMo 25.09 / Megatron-core 25.09-alpha.rc1 / TE release_v2.8 / NCCL v2.28.3-1, full-iteration
CUDA graphs, one micro-batch per data-parallel rank, distributed optimizer with fp8 parameters)
are all too fast, the multi-node ones by a per-step 19-46 ms (mlperf30's lead). Each part below
tests one candidate against the rows:

1. ``rows``: measured and predicted step, the gap (measured - predicted) in ms, the predicted
   compute / exposed communication / optimizer, nodes and NVLink domains, the data-parallel
   group (dp x cp ranks the gradients reduce over), the NIC per GPU and how many data-parallel
   collectives trainsim issues in one step (its timeline).
2. ``pairs``: rows that differ in one thing: the same work per GPU one node vs two (UF B200-8 /
   B200-16), the same layout on 400 vs 800 Gb/s NICs (GB200 / GB300 at 72 and 512 GPUs), the
   same gap at a 3.6x longer compute window (UF B200-16 cp 1 mbs 2 / B200-32 cp 2).
3. ``what-if: parameter all-gather exposed``: the rows priced with Megatron's
   ``overlap_param_gather`` off (the whole fp8 parameter all-gather before the forward, gradient
   reduction still overlapped).
4. ``host-paced step``: the eager work after the step's one host synchronisation (the gradient
   norm's ``.item()``), bounded from the source's loops at measured per-op host costs
   (``compute.host.PY_VIEW_S``, ``PY_LAUNCH_S``) and at the fitted eager-module cost
   (``HOST_S_PER_KERNEL``), minus the optimizer's GPU time it runs beside.
5. ``per collective``: the gap divided by the inter-node collectives of a step: the cost each
   would need if NCCL's per-collective host node under graph capture were the term.
6. ``CTA cap``: the dp / dp_cp communicators' rings across nodes at their ``max_ctas 8``
   (conf/nccl/custom_communicator_cta.yaml; ``parallel.dp_max_ctas``) channels of R each
   (mlperf30's lead 1; landed in this session at R = ``collectives.nccl.NET_CHANNEL_Bps``).
   R is unmeasured: 14 GB/s is NCCL's per-channel network figure for
   p2p (``p2p_channels.P2P_CHANNEL_Bps``); NCCL v2.28.3-1 brackets a collective channel's rate
   on a 400 Gb/s NIC between 24 GB/s (src/graph/connect.cc ``ncclTopoPostset`` L473-476 runs two
   CTAs per 48 GB/s NIC ring on sm90+ multi-node "to reach peak BW": two reach it) and 45 GB/s
   (the doubling threshold: one does not); 20 and 28 GB/s show the slope. A sweep, not a fit.

Sources read (each cited in the RESULTS block):
- Megatron-LM core_r0.14.0 megatron/core/optimizer/clip_grads.py ``get_grad_norm_fp32``
  (``total_norm.item()`` after the all-reduce: the host waits for the graph every step);
  distributed_data_parallel.py ``_make_forward_pre_hook`` / param_and_grad_buffer.py
  ``finish_param_sync`` (bucket i+1's all-gather dispatched once bucket i's is waited on, both
  inside the captured forward: ``is_graph_capturing`` is the per-layer graph flag, not set by
  ``full_cuda_graph.FullCudaGraphWrapper``); distrib_optimizer.py ``step_with_ready_grads``
  (no all-gather after the step when overlap_param_gather).
- TransformerEngine release_v2.8 transformer_engine/pytorch/tensor/utils.py
  ``_cast_master_weights_to_fp8_current_scaling`` (a Python loop over every fp8 weight, a
  kernel only for the weights in the rank's shard, one packed amax all-reduce).
- NCCL v2.28.3-1 src/enqueue.cc ``ncclLaunchPrepare`` (L1505-1520: under capture a plan with
  proxy ops, i.e. a network collective, gets a ``cudaLaunchHostFunc`` node on the shared host
  stream and its kernel waits on it; intra-node plans have none, NVIDIA/nccl#1805).
"""

from __future__ import annotations

import csv
import math
import sys
import warnings
from contextlib import contextmanager
from multiprocessing import Pool
from pathlib import Path

from trainsim.compute.host import HOST_S_PER_KERNEL, PY_LAUNCH_S, PY_VIEW_S

HERE = Path(__file__).resolve().parent
FILES = (HERE / "training_mlperf5.csv", HERE / "training_mlperf51_partners.csv")
LAYERS = 32
"""Llama 3.1 8B transformer layers."""
FP8_WEIGHTS_PER_LAYER = 4
"""fp8 weights of one layer (TE LayerNormLinear qkv, Linear proj, LayerNormMLP fc1 and fc2):
the tensors TE's cast loop visits."""
VIEWS_PER_WEIGHT = 3
"""Views per fp8 weight in TE v2.8's cast, whether or not the rank holds a piece of it: its amax
slot ``packed_amaxes[i:i+1]``, ``quantizer.scale.view(1)``, ``model_weight._scale_inv.view(1)``."""
SHARD_LAUNCHES, SHARD_VIEWS = 3, 2
"""Per fp8 weight with a piece in the rank's shard: ``master_weight.to(dtype)``,
``tex.compute_amax``, ``update_quantized`` (kernels); ``reshape(-1)[start:end]`` (views)."""
STEP_LAUNCHES = 5
"""Kernels after the sync that do not depend on the weight count: the clip's multi-tensor scale,
the Adam multi-tensor call, the amax all-reduce, the scale computation, zero_grad_buffer."""


def read() -> list[dict[str, str]]:
    rows = []
    for path in FILES:
        with open(path, newline="") as f:
            rows += [r for r in csv.DictReader(f) if r["model"] == "llama3-8b"]
    return rows


def ranks(r: dict[str, str]) -> int:
    """Ranks one gradient reduce-scatter spans (dp x cp)."""
    return int(r["num_gpus"]) // (int(r["tp"]) * int(r["pp"]))


def domains(r: dict[str, str]) -> int:
    """NVLink domains the job spans (``gpus_per_node`` is one domain's GPUs: 8 for a DGX, 64 or
    72 for an NVL72 rack as these runs use it)."""
    return math.ceil(int(r["num_gpus"]) / int(r["gpus_per_node"]))


def source(r: dict[str, str]) -> str | None:
    """NVIDIA's GB200/GB300 rows, University of Florida's B200 rows, or None: the partners'."""
    return next((p for p in ("mlperf51-nvidia", "mlperf51-uf") if r["id"].startswith(p)), None)


def shard_weights(r: dict[str, str]) -> float:
    """fp8 weights a rank's contiguous shard of the buffer touches: 1/ranks of them, plus one
    cut at its edge."""
    n = LAYERS * FP8_WEIGHTS_PER_LAYER
    return min(n, n / ranks(r) + 1)


def host_step_s(r: dict[str, str], per_op_s: float | None = None) -> float:
    """Host seconds of the eager work after the gradient norm's ``.item()``: TE's cast loop over
    every fp8 weight and the few multi-tensor calls (see the constants above). ``per_op_s``
    None: measured costs (a view ``PY_VIEW_S``, a kernel from a Python loop ``PY_LAUNCH_S``);
    a number: that cost for every op, views included (an upper bound at an eager module's
    ``HOST_S_PER_KERNEL``)."""
    n = LAYERS * FP8_WEIGHTS_PER_LAYER
    views = n * VIEWS_PER_WEIGHT + shard_weights(r) * SHARD_VIEWS
    launches = shard_weights(r) * SHARD_LAUNCHES + STEP_LAUNCHES
    if per_op_s is None:
        return views * PY_VIEW_S + launches * PY_LAUNCH_S
    return (views + launches) * per_op_s


CHANNEL_RATES_Bps = (math.inf, 14e9, 20e9, 24e9, 28e9)
"""Per-channel network rates of part 6 (a sweep, not a fit): inf, no cap (trainsim before the
33rd session's mlp33 block); 24 GB/s is ``collectives.nccl.NET_CHANNEL_Bps``."""


@contextmanager
def channel_rate(rate_Bps: float):
    """``collectives.nccl.NET_CHANNEL_Bps`` set to ``rate_Bps`` inside the block."""
    from trainsim.collectives import nccl

    saved = nccl.NET_CHANNEL_Bps
    nccl.NET_CHANNEL_Bps = rate_Bps
    try:
        yield
    finally:
        nccl.NET_CHANNEL_Bps = saved


def rate_label(rate_Bps: float) -> str:
    return "none" if math.isinf(rate_Bps) else f"{rate_Bps / 1e9:.0f}"


def _worker(r: dict[str, str]) -> dict:
    from trainsim.simulator import simulate
    from trainsim.validate import row_settings
    from trainsim.validate.training import (
        _tuned_layout,
        counts_checked,
        normalized_training_row,
        predict_training_row,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = predict_training_row(r)
        row, _ = normalized_training_row(r)
        cfg, _, _ = _tuned_layout(counts_checked(row), "auto")
        tl = simulate(cfg, keep_timeline=True).timeline
        saved = row_settings.OPTION_FIELDS["dp_overlap"]
        row_settings.OPTION_FIELDS["dp_overlap"] = ("parallel", ("overlap_grad_reduce",))
        try:
            no_ag = predict_training_row(r)
        finally:
            row_settings.OPTION_FIELDS["dp_overlap"] = saved
        capped = []
        for rate in CHANNEL_RATES_Bps:
            with channel_rate(rate):
                capped.append(predict_training_row(r).predicted)
    dp_tasks = [t for t in tl.tasks if t.stream[1] == "dp"]
    bd = base.extra["breakdown"]
    return {"id": r["id"], "measured": base.measured, "predicted": base.predicted,
            "compute": bd["compute_s"], "exposed": bd["exposed_comm_s"],
            "optimizer": bd["optimizer_s"], "collectives": len(dp_tasks),
            "no_ag": no_ag.predicted, "capped": capped}


def simulate_rows(rows: list[dict[str, str]]) -> dict[str, dict]:
    with Pool(2) as pool:
        return {o["id"]: o for o in pool.map(_worker, rows)}


def gap_ms(o: dict) -> float:
    return (o["measured"] - o["predicted"]) * 1e3


def signed(pred: float, meas: float) -> float:
    return 100 * (pred / meas - 1)


PAIRS = (
    ("one node -> two, same work", "mlperf51-uf-llama3.1-8b-b200-8", "mlperf51-uf-llama3.1-8b-b200-16"),
    ("400 -> 800 Gb/s NIC, 512 GPUs", "mlperf51-nvidia-llama3.1-8b-gb200-512",
     "mlperf51-nvidia-llama3.1-8b-gb300-512"),
    ("400 -> 800 Gb/s NIC, one NVL72", "mlperf51-nvidia-llama3.1-8b-gb200-72",
     "mlperf51-nvidia-llama3.1-8b-gb300-72"),
    ("compute window 3.6x shorter (cp 1 mbs 2 -> cp 2 mbs 1)", "mlperf51-uf-llama3.1-8b-b200-16",
     "mlperf51-uf-llama3.1-8b-b200-32"),
)
"""(what differs, a, b): rows that differ in one thing."""


def report(rows: list[dict[str, str]], out: dict[str, dict]) -> list[str]:
    head = (f"{'id':44s} {'meas':>6s} {'pred':>6s} {'sign%':>6s} {'gap':>6s} {'comp':>6s} "
            f"{'exp':>5s} {'opt':>5s} {'doms':>5s} {'ranks':>5s} {'nic':>4s} {'coll':>4s}")
    lines = ["1. rows (ms; gap = measured - predicted)", head]
    for r in rows:
        o = out[r["id"]]
        lines.append(
            f"{r['id']:44s} {o['measured']*1e3:6.1f} {o['predicted']*1e3:6.1f} "
            f"{signed(o['predicted'], o['measured']):+6.1f} {gap_ms(o):+6.1f} "
            f"{o['compute']*1e3:6.1f} {o['exposed']*1e3:5.1f} {o['optimizer']*1e3:5.2f} "
            f"{domains(r):5d} {ranks(r):5d} {r['nic_gbps_per_gpu'] or '-':>4s} "
            f"{o['collectives']:4d}")
    lines += ["", "2. pairs (measured ratio b/a, predicted ratio, gap a -> b ms)"]
    for what, a, b in PAIRS:
        if a in out and b in out:
            oa, ob = out[a], out[b]
            lines.append(f"{what:55s} x{ob['measured']/oa['measured']:.3f} vs "
                         f"x{ob['predicted']/oa['predicted']:.3f}; gap {gap_ms(oa):+.1f} -> "
                         f"{gap_ms(ob):+.1f}")
    lines += ["", "3. what-if: parameter all-gather exposed (signed %: as priced -> what-if)"]
    for r in rows:
        o = out[r["id"]]
        lines.append(f"{r['id']:44s} {signed(o['predicted'], o['measured']):+6.1f} -> "
                     f"{signed(o['no_ag'], o['measured']):+6.1f}")
    lines += mape_lines(rows, out, lambda o: [o["no_ag"]])
    lines += ["", (f"4. host-paced step after the gradient-norm sync (ms): measured per-op "
                   f"costs / every op at HOST_S_PER_KERNEL ({HOST_S_PER_KERNEL*1e6:.0f} us), "
                   "less the optimizer's GPU time")]
    for r in rows:
        o = out[r["id"]]
        lo, hi = host_step_s(r), host_step_s(r, HOST_S_PER_KERNEL)
        lines.append(f"{r['id']:44s} host {lo*1e3:5.2f} / {hi*1e3:5.2f}  exposed "
                     f"{max(0.0, lo - o['optimizer'])*1e3:5.2f} / "
                     f"{max(0.0, hi - o['optimizer'])*1e3:5.2f}  gap {gap_ms(o):+6.1f}")
    lines += ["", "5. per collective: gap / inter-node data-parallel collectives of a step (ms)"]
    for r in rows:
        o = out[r["id"]]
        if domains(r) > 1:
            lines.append(f"{r['id']:44s} {gap_ms(o):+6.1f} / {o['collectives']:3d} = "
                         f"{gap_ms(o) / o['collectives']:+.3f}")
    rates = " / ".join(rate_label(x) for x in CHANNEL_RATES_Bps)
    head = (f"6. data-parallel rings at dp_max_ctas channels of {rates} GB/s (signed %: "
            "as priced -> each rate)")
    lines += ["", head]
    for r in rows:
        o = out[r["id"]]
        cells = " ".join(f"{signed(p, o['measured']):+6.1f}" for p in o["capped"])
        lines.append(f"{r['id']:44s} {signed(o['predicted'], o['measured']):+6.1f} -> {cells}")
    lines += mape_lines(rows, out, lambda o: o["capped"])
    return lines


def mape_lines(rows: list[dict[str, str]], out: dict[str, dict], what) -> list[str]:
    """MAPE % by source, as priced -> each what-if prediction ``what(o)`` gives."""
    lines = []
    for label, group in (("NVIDIA GB", "mlperf51-nvidia"), ("UF B200", "mlperf51-uf"),
                         ("partners", None)):
        sel = [out[r["id"]] for r in rows if source(r) == group]
        base = sum(abs(signed(o["predicted"], o["measured"])) for o in sel) / len(sel)
        alt = [sum(abs(signed(p, o["measured"])) for o, p in zip(sel, col)) / len(sel)
               for col in zip(*(what(o) for o in sel))]
        lines.append(f"  {label:10s} ({len(sel):2d} rows) MAPE {base:.1f} -> "
                     + " / ".join(f"{a:.1f}" for a in alt))
    return lines


CAP_FILES = ("training_mlperf5.csv", "training_mlperf51_partners.csv",
             "training_mlperf51_amd.csv")
"""Every file of MLPerf 5.x rows (the profile that states the communicator caps)."""


def _capped_row(r: dict[str, str]) -> tuple[str, float, list[float]]:
    from trainsim.validate.training import predict_training_row

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = [predict_training_row(r).predicted]
        for rate in CHANNEL_RATES_Bps:
            with channel_rate(rate):
                out.append(predict_training_row(r).predicted)
    return r["id"], float(r["measured_iteration_s"]), out


def cap_files() -> list[str]:
    """Part 6 on every row of the MLPerf 5.x files: MAPE % as priced, then at each rate, and
    the largest move (points) of a row that is not a Llama 3.1 8B row against no cap."""
    rates = " / ".join(rate_label(x) for x in CHANNEL_RATES_Bps)
    head = (f"6b. whole files: as priced; data-parallel rings at dp_max_ctas channels of "
            f"{rates} GB/s (MAPE %)")
    lines = [head]
    for name in CAP_FILES:
        with open(HERE / name, newline="") as f:
            rows = list(csv.DictReader(f))
        with Pool(2) as pool:
            res = pool.map(_capped_row, rows)
        mape = [sum(abs(p[k] / m - 1) for _, m, p in res) / len(res) * 100
                for k in range(len(CHANNEL_RATES_Bps) + 1)]
        other = [max((abs(p[k] - p[1]) / m * 100 for (_, m, p), r in zip(res, rows)
                      if r["model"] != "llama3-8b"), default=0.0)
                 for k in range(2, len(CHANNEL_RATES_Bps) + 1)]
        lines.append(f"  {name:32s} ({len(rows):2d}) {mape[0]:.2f}; "
                     + " / ".join(f"{x:.2f}" for x in mape[1:])
                     + "; other rows move at most " + " / ".join(f"{x:.1f}" for x in other)
                     + " points")
    return lines


def main(argv: list[str]) -> None:
    if argv[:1] == ["files"]:
        print("\n".join(cap_files()))
        return
    rows = read()
    for line in report(rows, simulate_rows(rows)):
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
