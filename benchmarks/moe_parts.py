"""The MoE rows' predicted time taken apart, part by part, against the time each row misses by
(a diagnostic: nothing here feeds trainsim; issue 17 scope 4, 28th session).

    python benchmarks/moe_parts.py            # ~5 s on 2 cores

For every MoE row of the public file (errata applied: the recipe-true statement of each run), of
``benchmarks/training_heldout.csv``, ``benchmarks/training_moe_modelzoo.csv`` and
``benchmarks/training_dgxc2505.csv``, one MoE decoder layer's forward and backward ops (the
row's tuned settings, a selective recompute included) are priced alone, as
``benchmarks/layer_prices.py`` prints them, and summed by part:

* ``router``: the router GEMM, its fp32 casts, top-k / softmax, forced-balance logits;
* ``perm``: permute / unpermute, the chunk sorts and HybridEP / DeepEP staging and
  preprocessing around the exchange;
* ``xchg``: the dispatcher's collectives on the expert-parallel group (all-to-all, all-gather,
  the token-count and routing-map gathers), each at its network time, overlapped or not;
* ``gemm``: the routed experts' GEMMs (``expert_fc*``, forward, dgrad, wgrad);
* ``quant``: the experts' fp8 pad / unpad, casts, transposes and MXFP8 swizzles;
* ``host``: what the pricer charges as host time over the layer (launches the GPU waits for,
  the host sync on the token counts included).

``gap/pass`` is (measured - predicted) over the heaviest stage's layer passes (micro-batches per
rank x layers of the heaviest pipeline stage): the time each MoE layer's forward + backward
would have to gain for one part to close the row. The columns ``x<part>`` give that gap as a
multiple of the part (``gemm`` 0.5: the experts' GEMMs 1.5x slower would close the row); a
part whose multiple wildly differs between rows that miss alike is not what they miss.
``tpe``: rows per local expert in the experts' GEMM (``m``); ``le``: local experts; ``ovl``:
``o`` where the expert all-to-all overlap (combined 1F1B) is on.
"""

from __future__ import annotations

import csv
import sys
import tempfile
from multiprocessing import Pool
from pathlib import Path

from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import corrected_file
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm, Gemm, Op
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).parent
PARTS = ("router", "perm", "xchg", "gemm", "quant")
FILES = {"public": str(BUNDLED_DIR / "training_public.csv"),
         "heldout": str(HERE / "training_heldout.csv"),
         "modelzoo": str(HERE / "training_moe_modelzoo.csv"),
         "dgxc2505": str(HERE / "training_dgxc2505.csv")}


def part_of(op: Op) -> str | None:
    """The MoE part an op of a decoder layer belongs to (None: attention, norms, shared
    experts, residuals)."""
    name = op.name.removeprefix("recompute.")
    base = name.split(".")[0]
    if isinstance(op, Comm):
        return "xchg" if op.group == "ep" else None
    if base.startswith("router"):
        return "router"
    if base.startswith(("permute", "unpermute", "hybridep", "deepep", "moe")):
        return "perm"
    if base.startswith("expert_fc"):
        return "gemm" if name.removesuffix(".dgrad").removesuffix(".wgrad") == base \
            else "quant"
    if base.startswith("expert_fp8"):
        return "quant"
    return None


def _op_s(pricer: Pricer, op: Op) -> float:
    return pricer.comm_time(op) if isinstance(op, Comm) else pricer.compute.explain(op)[0]


def first_kernels(pricer: Pricer, lf: list[Op], lb: list[Op]) -> float:
    """Upper bound on what Hopper's kernel scheduling adds to a combined-1F1B pair: each of
    its four exchanges held until the compute-stream kernel that starts with it has ended
    (Megatron-Bridge scripts/performance/perf_plugins.py ``_set_num_cuda_device_max_connections``,
    v0.2.0 L226-234, v0.4.2 L241-249: with more than one device connection "communication
    kernel will be pushed to the end of the GEMM kernel", and the a2a overlap keeps 8 or 32 on
    Hopper). The kernels: the forward attention node's first (beside the backward's combine),
    the backward MLP node's first (beside the forward's dispatch), the forward MLP node's first
    (beside the backward's dispatch) and the backward attention node's first (beside the
    forward's combine), each counted whole whatever its kind (the comment names persistent
    GEMMs; a short elementwise kernel would let the exchange in sooner)."""

    def after(ops: list[Op], kind: str) -> Op | None:
        seen = False
        for op in ops:
            if isinstance(op, Comm) and op.group == "ep" and op.kind == "all_to_all" \
                    and kind in op.name:
                seen = True
            elif seen and not isinstance(op, Comm):
                return op
        return None

    firsts = [next((op for op in lf if not isinstance(op, Comm)), None),
              after(lb, "combine"), after(lf, "dispatch"), after(lb, "dispatch")]
    return sum(_op_s(pricer, op) for op in firsts if op is not None)


def _rows(path: str) -> list[dict[str, str]]:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            fixed, _ = corrected_file(path, str(HERE / "training_errata.csv"), tmp)
        except Exception:  # noqa: BLE001 - a file the errata do not correct
            fixed = None
        with open(fixed or path, newline="") as fh:
            return [r for r in csv.DictReader(fh)
                    if (r.get("num_experts") or "0") not in ("", "0", "1")
                    or r["model"].startswith(("deepseek-v3", "qwen3-30b", "qwen3-235b",
                                              "gpt-oss", "mixtral"))]


def parts(row: dict[str, str]) -> dict[str, object] | None:
    """One row's MoE layer taken apart (seconds per layer forward + backward)."""
    res = predict_training_row(row)
    if res.error or not res.measured:
        return None
    cfg = row_config(row, res.chosen)
    if not cfg.model.num_experts:
        return None
    pricer, sh = Pricer(cfg), shard_of(cfg)
    layer = next(i for i in reversed(range(cfg.model.num_layers)) if cfg.model.is_moe_layer(i))
    lf = layer_forward(cfg, sh, moe=cfg.model.is_moe_layer(layer))
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    out: dict[str, object] = {p: 0.0 for p in PARTS}
    tpe = le = 0
    for op in lf + lb:
        p = part_of(op)
        if p is None:
            continue
        out[p] = float(out[p]) + _op_s(pricer, op)  # type: ignore[arg-type]
        if isinstance(op, Gemm) and op.name == "expert_fc1":
            tpe, le = op.m, op.batch
    hold = first_kernels(pricer, lf, lb)
    host = 0.0
    charged = 0.0
    for ops in (lf, lb):
        priced = pricer.price(ops)
        charged += priced.duration_s
        host += dict(priced.summary).get("host", 0.0)
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    passes = m * max(cfg.stage_layer_counts)
    out.update(id=row["id"], measured=res.measured, predicted=res.predicted, host=host, hold=hold,
               layer=charged, passes=passes, tpe=tpe, le=le,
               gap=(res.measured - res.predicted) / passes,
               how=("o" if cfg.parallel.moe_overlap_ep_comm else "-") + " " +
               (row.get("moe_dispatcher") or "?")[:8] + " " + row["gpu"][:4])
    return out


def main(argv: list[str]) -> int:
    jobs = [r for f in FILES.values() for r in _rows(f)]
    with Pool(2) as pool:
        got = [g for g in pool.map(parts, jobs) if g]
    print(f"{'row':48s} {'err%':>6s} {'gap/pass':>8s} {'layer':>6s} " +
          " ".join(f"{p:>6s}" for p in (*PARTS, "host", "hold")) + "  " +
          " ".join(f"{'x' + p:>6s}" for p in ("gemm", "xchg", "perm", "host")) +
          f" {'tpe':>5s} {'le':>3s}  ovl dispatch gpu")
    for g in got:
        err = 100.0 * (g["predicted"] / g["measured"] - 1.0)  # type: ignore[operator]
        ms = {p: 1e3 * float(g[p]) for p in (*PARTS, "host", "hold", "gap", "layer")}  # type: ignore[arg-type]
        ratios = " ".join(f"{ms['gap'] / ms[p]:6.2f}" if ms[p] > 0 else f"{'-':>6s}"
                          for p in ("gemm", "xchg", "perm", "host"))
        print(f"{g['id']:48.48s} {err:+6.1f} {ms['gap']:8.2f} {ms['layer']:6.2f} " +
              " ".join(f"{ms[p]:6.2f}" for p in (*PARTS, "host", "hold")) + "  " + ratios +
              f" {g['tpe']:5d} {g['le']:3d}  {g['how']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
