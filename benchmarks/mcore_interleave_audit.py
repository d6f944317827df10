"""Megatron-core's interleaved 1F1B, as trainsim's timeline runs it, against the rows it
misses: can any chunk-granular mechanism of the schedule hold the gap? (a check, not an
input: nothing here feeds trainsim)

    PYTHONPATH=src python benchmarks/mcore_interleave_audit.py [ROW_ID ...]
    # no ids: the public megatron-core rows, the two mlm_strong rows and, as controls, the
    # H100 bf16 NeMo rows of training_dgxc / dgxc2502 that interleave under TP 8

Per row, from one simulated iteration (``simulate(keep_timeline=True)``) of the row as the
scoreboard prices it (empty cells tuned):

- ``gap/lm``: (measured - predicted) over the layer-micro-batch passes of one stage (layers
  per stage x micro-batches per rank), ms; ``x compute``: the growth of the predicted compute
  that alone closes the gap.
- ``sends``: pipeline sends on the busiest stage and their summed time. Megatron core_v0.8.0
  (megatron/core/pipeline_parallel/schedules.py ``forward_backward_pipelining_with_interleaving``)
  sends one activation per forward chunk-pass and one gradient per backward chunk-pass, except
  the last virtual stage's forward (warm-up L848-849, steady state L948-949: ``output_tensor =
  None``) and the first virtual stage's backward (L993-994 ``input_tensor_grad = None``; in the
  cool-down its ``backward_step`` returns no input gradient): 2 m v per middle stage, 2 m v - m
  on the first and last. ``sends/gap``: the share of the gap that every send exposed in full
  would give (a bound: with ``--overlap-p2p-comm`` trainsim hides them).
- ``fwd0 idle``: compute idle on pipeline rank 0 before its chunks' first forwards (the
  distributed optimizer's per-chunk parameter all-gathers; core_v0.8.0 dispatches them one
  after another from the forward pre-hooks, ``_finish_param_sync_helper``).
- ``dp exp``: exposed data-parallel time (the per-chunk gradient reduce-scatters, each
  launched at its chunk's last backward: schedules.py ``backward_step_helper``'s
  ``is_last_microbatch_for_model_chunk`` and ``enable_grad_sync``).
- ``last/med``: the last stage's compute over the median stage's (the loss head on the last
  virtual stage: no ``--account-for-*-in-pipeline-split`` before core_v0.11.0).
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections.abc import Iterable

from trainsim.simulator import simulate
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config

PUBLIC = str(BUNDLED_DIR / "training_public.csv")
STRONG = "benchmarks/training_mlm_strong.csv"
CONTROLS = {
    "benchmarks/training_dgxc.csv": (
        "dgxc2411-nemotron4-340b-bf16-128", "dgxc2411-nemotron4-340b-bf16-2048",
        "dgxc2411-llama3.1-405b-bf16-576", "dgxc2411-llama3.1-405b-bf16-2304",
        "dgxc2411-gpt3-175b-bf16-128", "dgxc2411-gpt3-175b-bf16-2048"),
    "benchmarks/training_dgxc2502.csv": (
        "dgxc2502-llama3.1-405b-bf16-576", "dgxc2502-gpt3-175b-bf16-128",
        "dgxc2502-gpt3-175b-bf16-2048"),
}


def expected_sends(m: int, vpp: int, stage: int, pp: int) -> int:
    """Pipeline sends of one stage in one interleaved iteration (module docstring): one per
    chunk-pass each way, less the last virtual stage's forwards and the first virtual
    stage's backwards (each m passes), which send nothing."""
    sends = 2 * m * vpp
    if stage == pp - 1:
        sends -= m
    if stage == 0:
        sends -= m
    return sends


def audit(row: dict[str, str]) -> dict[str, object] | None:
    """The module docstring's figures for one row; None where the row is not predicted."""
    res = predict_training_row(row)
    if res.error or res.predicted is None:
        return None
    cfg = row_config(row, res.chosen)
    result = simulate(cfg, keep_timeline=True)
    tl = result.timeline
    pp, vpp = cfg.parallel.pp, cfg.parallel.vpp
    m = cfg.training.global_batch_size // (cfg.training.micro_batch_size * cfg.dp)
    busy = [0.0] * pp
    sends = [0] * pp
    send_s = [0.0] * pp
    first_fwd_idle, seen, prev_end = 0.0, set(), 0.0
    for i, t in enumerate(tl.tasks):
        stage, stream = t.stream
        dur = tl.end_s[i] - tl.start_s[i]
        if stream == "compute":
            busy[stage] += dur
            if stage == 0:
                if t.label.startswith("F mb0 c") and t.label not in seen:
                    seen.add(t.label)
                    first_fwd_idle += max(0.0, tl.start_s[i] - prev_end)
                prev_end = tl.end_s[i]
        elif stream == "pp" and t.label.startswith("send "):
            sends[stage] += 1
            send_s[stage] += dur
    layers = max(cfg.stage_layer_counts)
    gap = res.measured - res.predicted
    heavy = max(range(pp), key=lambda s: busy[s])
    return {
        "id": row["id"], "tp": cfg.parallel.tp, "pp": pp, "vpp": vpp,
        "mb": cfg.training.micro_batch_size, "m": m, "layers": layers,
        "measured": res.measured, "predicted": res.predicted,
        "error": res.predicted / res.measured - 1,
        "gap_per_layer_mb_s": gap / (layers * m),
        "compute_growth": 1 + gap / result.breakdown["compute_s"],
        "sends": sends, "send_s": send_s, "heavy": heavy,
        "sends_over_gap": send_s[heavy] / gap if gap > 0 else float("nan"),
        "first_fwd_idle_s": first_fwd_idle,
        "dp_exposed_s": result.breakdown["exposed_comm_s"],
        "last_over_median": busy[-1] / statistics.median(busy),
    }


def rows_of(path: str, ids: Iterable[str] | None) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if ids is None:
        return [r for r in rows if r.get("framework") == "megatron-core"]
    want = set(ids)
    return [r for r in rows if r["id"] in want]


def line(a: dict[str, object]) -> str:
    h = a["heavy"]
    return (f"{a['id']:34s} tp{a['tp']} pp{a['pp']:<2} vpp{a['vpp']:<2} mb{a['mb']} m{a['m']:<4} "
            f"{100 * a['error']:+6.1f} %  gap/lm {1e3 * a['gap_per_layer_mb_s']:6.2f} ms  "
            f"x compute {a['compute_growth']:.3f}  sends {a['sends'][h]:4d} "
            f"{a['send_s'][h]:.3f} s (sends/gap {a['sends_over_gap']:.2f})  "
            f"fwd0 idle {1e3 * a['first_fwd_idle_s']:5.1f} ms  dp exp {a['dp_exposed_s']:.3f} s  "
            f"last/med {a['last_over_median']:.3f}")


def main(argv: list[str]) -> None:
    if argv:
        sources = [(p, argv) for p in (PUBLIC, STRONG, *CONTROLS)]
    else:
        sources = [(PUBLIC, None), (STRONG, None), *CONTROLS.items()]
    for path, ids in sources:
        for row in rows_of(path, ids):
            a = audit(row)
            print(line(a) if a else f"{row['id']}: not predicted")


if __name__ == "__main__":
    main(sys.argv[1:])
