"""Where Paxml's missing time could be: each dgxc Paxml row's gap (measured - predicted) beside
the price of each candidate the source names, so one can see which of them fits both the 5B
(FSDP over 8 GPUs of one node) and the 175B (FSDP over 128 GPUs on 16 nodes). A check, not an
input: nothing here feeds trainsim, and no candidate below is a trainsim mechanism.

    PYTHONPATH=src python benchmarks/paxml56_gap.py [--markdown] [--file CSV] [ROW_ID ...]

(``--file benchmarks/training_dgxc_maxtext.csv``: the same columns for MaxText's rows, whose
recipe runs the overlap Paxml's lacks; B and C are priced for a GELU MHA model only.)

Columns (seconds a step):
- ``gap``: measured - predicted (trainsim as ``validate`` runs the row).
- ``comm``: every FSDP collective trainsim prices for the step (the forward's all-gathers, the
  backward's all-gathers and reduce-scatters, the replicas' gradient reduction), and
  ``exposed``: the part of it the prediction does not hide behind compute.
- ``serial``: ``comm - exposed``, what the step would gain were no collective overlapped
  (candidate A: XLA's latency-hiding scheduler failing to overlap the scanned layers'
  collectives; the dgxc Paxml recipe runs with ``--xla_gpu_enable_while_loop_double_buffering=
  false`` and no profile-guided latency estimator, where the dgxc MaxText recipe, whose rows
  trainsim predicts at -7..+14 % with its collectives overlapped, sets both).
- ``carry``: candidate B, the copies XLA's copy insertion makes of values carried from one scan
  iteration to the next when the loop is not unrolled by two (the double-buffering pass's
  stated purpose, "double buffering between inputs and outputs of previously rolled
  iterations"): the pipelined all-gather's 16-bit layer weights in the forward and the
  backward loop and the pipelined reduce-scatter's unsharded 16-bit layer gradient, each read
  and written once a layer, at the GPU's datasheet HBM bandwidth (a lower bound).
- ``dus``: candidate C, the copies of cuBLAS outputs written into the scan's stacked residual
  buffers by dynamic-update-slice (NVIDIA/JAX-Toolbox docs/GPU_performance.md, 2024-04-04:
  "removes extra copies introduced by DUS ... with custom NVIDIA kernels (like cuBLAS for
  GEMMs). This happens in particular when used with scan operations"; the dgxc Paxml flags
  set neither ``--xla_gpu_enable_custom_fusions`` nor
  ``--xla_gpu_enable_address_computation_fusion``): the saved GEMM outputs of each layer
  (SAVE_DOT_ONLY: q/k/v, out, fc1, fc2; SAVE_QKV_OUT_PROJ: q/k/v, out) written and read once,
  and the q/k/v slice handed to the fused-attention custom call in the backward, at the HBM
  datasheet bandwidth (a lower bound).
- ``window``: candidate D, XLA's approximate latency estimator (the GPU latency-hiding
  scheduler without a profile-guided estimate: an async collective's latency 5000, a cuBLAS or
  other custom call 1000, a loop fusion 1000: "the LHS will try to schedule approximately 5 of
  these in between each start/end pair", xla/service/gpu/gpu_hlo_schedule.cc
  GpuLatencyEstimator): each layer's collective hides behind only the WINDOW kernels before
  its done, taken here as the last kernels of the layer's pass in trainsim's op order (the
  pipelined all-gather's done sits at the loop body's end; the reduce-scatter's and the
  replicas' reductions each get the WINDOW kernels before the previous one's), priced as
  trainsim prices them; the column is what the step would gain over trainsim's overlap.
- ``bwd``: candidate E, D's forward with every backward collective exposed: the kernels
  nearest the end of a backward loop body are taken to be the per-tensor gradient
  conversions and stacking updates (tiny fusions, one per weight tensor, each costed 1000
  like a GEMM by the estimator), so the window there hides nearly nothing. An inference about
  XLA's schedule, not read from a compiled module.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from trainsim import simulate
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Comm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

ROWS = Path(__file__).with_name("training_dgxc_paxml.csv")
BYTES_16BIT = 2
WINDOW = 5  # kernels: XLA's kHighLatency 5000 over kMediumCost 1000


@dataclass(frozen=True)
class Gap:
    row_id: str
    measured_s: float
    predicted_s: float
    comm_s: float
    exposed_s: float
    carry_s: float | None
    dus_s: float | None
    window_s: float
    bwd_s: float

    @property
    def gap_s(self) -> float:
        return self.measured_s - self.predicted_s

    @property
    def serial_s(self) -> float:
        return self.comm_s - self.exposed_s


def _comm_s(out) -> float:
    """Every data-parallel collective of the step, hidden or not: the backward's tasks on the
    dp streams plus the forward's gathers, priced inside the forward pass (its ``dp_comm``
    segment shows only their exposed part, so they are counted as the backward's gathers,
    which move the same bytes)."""
    tl = out.timeline
    gathers = sum(t.duration_s for t in tl.tasks if t.stream[1] == "dp" and "all-gather" in t.label)
    rest = sum(t.duration_s for t in tl.tasks if t.stream[1] in ("dp", "dp_rep"))
    return rest + gathers


def _kernel_times(cfg) -> tuple[list[float], list[float]]:
    """The compute kernels of one layer's forward and backward (with its recompute), in
    trainsim's op order, each priced alone."""
    pricer, sh = Pricer(cfg), shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=False)
    bwd = layer_recompute(cfg, sh, fwd, whole=False) + backward_of(fwd, sh)

    def times(ops) -> list[float]:
        return [t for t in (pricer.compute.explain(op)[0] for op in ops
                            if not isinstance(op, Comm)) if t > 0]
    return times(fwd), times(bwd)


def _window_s(cfg, out, backward_window: bool = True) -> float:
    """Candidate D: the step's exposed collective time when each collective of a layer hides
    behind only WINDOW kernels, less what trainsim already exposes; candidate E
    (``backward_window`` False): no window in the backward."""
    tl, layers = out.timeline, cfg.model.num_layers
    per_layer = {}
    for kind, stream, word in (("ag", "dp", "all-gather"), ("rs", "dp", "reduce-scatter"),
                               ("rep", "dp_rep", "")):
        tasks = [t.duration_s for t in tl.tasks if t.stream[1] == stream and word in t.label]
        per_layer[kind] = sum(tasks) / layers if tasks else 0.0
    fwd, bwd = _kernel_times(cfg)

    def window(times: list[float], slot: int) -> float:
        end = len(times) - slot * WINDOW
        return sum(times[max(0, end - WINDOW):max(0, end)])

    exposed = max(0.0, per_layer["ag"] - window(fwd, 0))
    for slot, kind in enumerate(("ag", "rs", "rep")):
        exposed += max(0.0, per_layer[kind] - (window(bwd, slot) if backward_window else 0.0))
    return layers * cfg.num_microbatches * exposed - out.breakdown["exposed_comm_s"]


def _saved_dot_elements(row: dict[str, str], h: int, f: int) -> int:
    """Elements per token of the GEMM outputs the row's remat policy keeps (its
    ``remat_policy`` cell; before it, its ``recompute_modules`` reading of the policy)."""
    modules = row.get("recompute_modules", "")
    qkv_out = 3 * h + h
    keeps_mlp = row.get("remat_policy") == "save_dot_only" or \
        not row.get("remat_policy") and "mlp" not in modules
    return qkv_out + f + h if keeps_mlp else qkv_out


def gap_of(row: dict[str, str]) -> Gap:
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    out = simulate(cfg, keep_timeline=True)
    m, t = cfg.model, cfg.training
    h, f, layers = m.hidden_size, m.ffn_size, m.num_layers
    layer_params = 4 * h * h + 2 * h * f
    tokens = t.micro_batch_size * t.seq_length
    bw = cfg.cluster.gpu.hbm_bw_Bps
    micro_batches = cfg.num_microbatches
    if row.get("activation", "") == "swiglu" or (m.num_kv_heads or m.num_attention_heads) != \
            m.num_attention_heads:
        return Gap(row["id"], float(row["measured_iteration_s"]), out.iteration_time_s,
                   _comm_s(out), out.breakdown["exposed_comm_s"], None, None,
                   _window_s(cfg, out), _window_s(cfg, out, backward_window=False))
    # B: gathered weights carried in the forward and backward loops, the unsharded gradient
    # carried in the backward loop; each copy reads and writes its bytes
    carry = 3 * 2 * layer_params * BYTES_16BIT * layers * micro_batches / bw
    # C: saved GEMM outputs written by a DUS copy and read back, plus the backward's q/k/v slice
    saved = _saved_dot_elements(row, h, f) * tokens * BYTES_16BIT
    qkv = 3 * h * tokens * BYTES_16BIT
    dus = (2 * saved + 2 * qkv) * layers * micro_batches / bw
    return Gap(row["id"], float(row["measured_iteration_s"]), out.iteration_time_s,
               _comm_s(out), out.breakdown["exposed_comm_s"], carry, dus, _window_s(cfg, out),
               _window_s(cfg, out, backward_window=False))


def _lines(gaps: list[Gap], markdown: bool) -> list[str]:
    head = ["row", "measured", "predicted", "gap", "comm", "exposed", "A serial", "B carry",
            "C dus", "D window", "E bwd", "gap - A", "gap - B - C", "gap - D", "gap - E"]
    def cell(x: float | None, fmt: str) -> str:
        return "-" if x is None else format(x, fmt)

    rows = [[g.row_id.removeprefix("dgxc-"), f"{g.measured_s:.3f}", f"{g.predicted_s:.3f}",
             f"{g.gap_s:+.3f}", f"{g.comm_s:.3f}", f"{g.exposed_s:.3f}", f"{g.serial_s:.3f}",
             cell(g.carry_s, ".3f"), cell(g.dus_s, ".3f"), f"{g.window_s:.3f}",
             f"{g.bwd_s:.3f}", f"{g.gap_s - g.serial_s:+.3f}",
             cell(None if g.carry_s is None or g.dus_s is None
                  else g.gap_s - g.carry_s - g.dus_s, "+.3f"),
             f"{g.gap_s - g.window_s:+.3f}", f"{g.gap_s - g.bwd_s:+.3f}"] for g in gaps]
    if markdown:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
            ["| " + " | ".join(r) + " |" for r in rows]
    width = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    return ["  ".join(x[i].rjust(width[i]) for i in range(len(head))) for x in [head, *rows]]


def main(argv: list[str]) -> int:
    markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    path = ROWS
    if "--file" in argv:
        i = argv.index("--file")
        if i + 1 >= len(argv):
            print("--file needs a training CSV", file=sys.stderr)
            return 2
        path = Path(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    wanted = set(argv)
    with path.open(newline="") as fh:
        every = list(csv.DictReader(fh))
    rows = [r for r in every if not wanted or r["id"] in wanted]
    unknown = wanted - {r["id"] for r in every}
    if unknown:
        print(f"unknown row id(s) in {path}: {sorted(unknown)}", file=sys.stderr)
        return 2
    for line in _lines([gap_of(r) for r in rows], markdown):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
