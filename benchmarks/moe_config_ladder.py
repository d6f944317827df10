"""Qwen3-30B-A3B on 16 H100, two published Megatron-Bridge configurations of the same model, GPU
count, micro-batch and fp8 recipe, and the ladder of settings between them (a diagnostic:
nothing here feeds trainsim; issue 17 scope 4, 30th session).

    python benchmarks/moe_config_ladder.py            # ~30 s on 2 cores
    python benchmarks/moe_config_ladder.py --releases # the archive points, ~15 s

The public file's 25.11 row (EP 8, PP 2 x VPP 12, NCCL all-to-all dispatcher with the expert
all-to-all overlap) and its 26.04 row (EP 16, PP 1, HybridEP) route the same 4,096 tokens per
GPU per micro-batch through the same 48 layers; every GPU runs the same expert FLOPs (16 local
experts of ~2,064 rows against 8 of ~4,135). The measured time per layer pass (forward +
backward of one decoder layer for one micro-batch) is read from each row as (measured -
the predicted time outside the layers) / layer passes, the passes being micro-batches per rank x
the heaviest stage's layers; the predicted one is ``moe_parts.parts``' layer (its forward and
backward op lists priced alone, host waits included). The ladder changes one setting at a time
from the 25.11 row toward the 26.04 row and prints trainsim's layer pass and its parts, so that
the measured ratio between the two rows can be set against the settings trainsim charges for it.

``--releases`` (31st session) adds the same configurations as Megatron-Bridge's archive publishes
them release by release (docs/performance-summary-archive.md @ 067f987df03b8355b03192d88d70f1709fedf51a,
tokens/s/GPU; each point's cells from that release's perf recipe, cited in ``RELEASES``), so
that a configuration's error can be told from a release's: the same layout measured in two
releases, and two layouts measured in one patch release apart. The public rows' cells are
those ``benchmarks/training_errata.csv`` gives (the recipe-true statement of each run).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import moe_parts

from trainsim.compute.host import HOST_S_PER_KERNEL, launches
from trainsim.pricing import Pricer
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

HERE = Path(__file__).parent
ROWS = (("public", "bridge2511-qwen3-30b-a3b-16"),
        ("public", "bridge2604p1-qwen3-30b-a3b-h100-16-ep16"),
        ("heldout", "bridge2606-qwen3-30b-a3b-h100-16-fp8"))
FILES = {"public": BUNDLED_DIR / "training_public.csv", "heldout": HERE / "training_heldout.csv"}
LADDER = (
    ("25.11 row as stated", {}),
    ("- expert a2a overlap", {"options": "pp_overlap;dp_overlap"}),
    ("PP 1 (no VPP), EP 8, a2a", {"pp": "1", "vpp": "", "options": "dp_overlap"}),
    ("PP 1, EP 8, HybridEP", {"pp": "1", "vpp": "", "options": "dp_overlap",
                              "moe_dispatcher": "hybridep"}),
    ("PP 1, EP 16, a2a", {"pp": "1", "vpp": "", "ep": "16", "options": "dp_overlap"}),
    ("PP 1, EP 16, HybridEP (26.04 cfg)", {"pp": "1", "vpp": "", "ep": "16", "options": "dp_overlap",
                                           "moe_dispatcher": "hybridep"}),
)


def _row(file: str, rid: str) -> dict[str, str]:
    with open(FILES[file], newline="") as fh:
        return next(r for r in csv.DictReader(fh) if r["id"] == rid)


def measured_pass(row: dict[str, str]) -> tuple[float, float, float]:
    """(measured, predicted) seconds per layer pass and the predicted error (%) of one row."""
    g = moe_parts.parts(row)
    assert g is not None
    outside = float(g["predicted"]) - float(g["layer"]) * int(g["passes"])  # type: ignore[arg-type]
    meas = (float(g["measured"]) - outside) / int(g["passes"])  # type: ignore[arg-type]
    err = 100.0 * (float(g["predicted"]) / float(g["measured"]) - 1.0)  # type: ignore[arg-type]
    return meas, float(g["layer"]), err  # type: ignore[arg-type]


def launch_load(row: dict[str, str]) -> tuple[int, float]:
    """Host launches of one MoE layer pass (forward + backward, as ``moe_parts`` builds it) and
    its GPU seconds (each op priced alone, no overlap)."""
    res = predict_training_row(row)
    cfg = row_config(row, res.chosen)
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    ops = lf + lb
    return sum(launches(op) for op in ops), sum(moe_parts._op_s(pricer, op) for op in ops)


ARCHIVE = "Megatron-Bridge docs/performance-summary-archive.md @ 067f987d"
RELEASES = {
    "Qwen3-30B-A3B, 16 H100, FP8 current scaling, MBS 1, seq 4096": (
        # 25.11: Bridge v0.2.0 QWEN3_30B_A3B_H100_FP8_CS_BASE_CONFIG (PP 2, VP 12, EP 8,
        # moe_a2a_overlap; no flex backend: alltoall); the table's MBS 2 / VP 24 / GA 32 are
        # the 25.09 token-drop cells (12th session)
        ("25.11 PP2 VP12 EP8 alltoall + overlap, GBS 512", "bridge2511-qwen3-30b-a3b-16",
         {}, 5275),
        # 26.02: v0.3.0 QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1 (GBS 1024, PP 2, VP 12,
        # moe_a2a_overlap, moe_flex_dispatcher_backend "deepep"; qwen3_moe.py
        # _qwen3_moe_common applies the flex backend: flex + DeepEP)
        ("26.02 PP2 VP12 EP8 DeepEP + overlap, GBS 1024", "bridge2511-qwen3-30b-a3b-16",
         {"global_batch_size": "1024", "moe_dispatcher": "deepep", "framework_version": "26.02"},
         5113),
        # 26.02.01: v0.3.1 QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1 (EP 16, no overlap,
        # "hybridep"; the table still prints PP 2 / VP 12 / EP 8)
        ("26.02.01 PP1 EP16 HybridEP, GBS 1024", "bridge2604p1-qwen3-30b-a3b-h100-16-ep16",
         {"framework_version": "26.02"}, 9058),
        ("26.04 PP1 EP16 HybridEP, GBS 1024", "bridge2604p1-qwen3-30b-a3b-h100-16-ep16",
         {"framework_version": "26.04"}, 8901),
        ("26.04.01 (the public row)", "bridge2604p1-qwen3-30b-a3b-h100-16-ep16", {}, 8960),
    ),
    "Qwen3-235B-A22B, 256 H100, FP8 current scaling, TP2 PP8 VP4 EP32, alltoall + overlap": (
        # every tag v0.2.0-v0.4.2: QWEN3_235B_A22B(_PRETRAIN_CONFIG)_H100_FP8_CS (moe_a2a_overlap,
        # no flex backend applied: alltoall; v0.3.1 names "deepep" in the base config but its
        # qwen3_235b_a22b_pretrain_config_h100 sets moe_token_dispatcher_type "alltoall")
        ("25.11, GBS 2048", "bridge2511-qwen3-235b-a22b-h100-256-gbs2048", {}, 1575),
        ("26.02, GBS 8192", "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192",
         {"framework_version": "26.02"}, 1633),
        ("26.02.01, GBS 8192", "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192",
         {"framework_version": "26.02"}, 1611),
        ("26.04, GBS 8192", "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192",
         {"framework_version": "26.04"}, 1686),
        ("26.04.01 (the public row)", "bridge2604p1-qwen3-235b-a22b-h100-256-gbs8192", {}, 1712),
    ),
    "gpt-oss-120b, 64 GPUs, BF16, GBS 1280, recompute layernorm + moe_act": (
        # B200 V2: v0.4.0 GPT_OSS_120B_PRETRAIN_CONFIG_B200_BF16_V2 (EP 8, MBS 4,
        # moe_flex_dispatcher_backend "hybridep"), v0.4.2 the same without the backend
        # (gpt_oss.py: alltoall); v0.3.x's B200 V2 is EP 64 where the 26.02.01 table says EP 8,
        # so that point is left out
        ("B200 26.04 EP8 MBS4 HybridEP", "bridge2604p1-gpt-oss-120b-b200-64",
         {"moe_dispatcher": "hybridep", "framework_version": "26.04"}, 13045),
        ("B200 26.04.01 EP8 MBS4 alltoall (the public row)", "bridge2604p1-gpt-oss-120b-b200-64",
         {}, 13568),
        # H100 V2 in every tag v0.3.0-v0.4.2: PP 4, EP 8, MBS 1, no flex backend (the provider's
        # / recipe's alltoall)
        ("H100 26.02 PP4 EP8 MBS1 alltoall", "bridge2604p1-gpt-oss-120b-h100-64",
         {"framework_version": "26.02"}, 5993),
        ("H100 26.02.01", "bridge2604p1-gpt-oss-120b-h100-64",
         {"framework_version": "26.02"}, 5984),
        ("H100 26.04", "bridge2604p1-gpt-oss-120b-h100-64",
         {"framework_version": "26.04"}, 5810),
        ("H100 26.04.01 (the public row)", "bridge2604p1-gpt-oss-120b-h100-64", {}, 5824),
    ),
}


def recipe_rows() -> dict[str, dict[str, str]]:
    """The public file's rows with the errata applied (``benchmarks/training_errata.csv``)."""
    return {r["id"]: r for r in moe_parts._rows(str(FILES["public"]))}


def measured_step(row: dict[str, str], tokens_per_s: float) -> float:
    """Seconds per step of ``row``'s run at ``tokens_per_s`` per GPU (GBS x seq / (tokens/s/GPU
    x GPUs), as the public rows derive theirs)."""
    gbs, seq, gpus = (int(row[k]) for k in ("global_batch_size", "seq_length", "num_gpus"))
    return gbs * seq / (tokens_per_s * gpus)


def release_point(base: dict[str, str], change: dict[str, str], tokens_per_s: float
                  ) -> dict[str, float]:
    """One archive point: ``base`` with ``change``, measured at ``tokens_per_s`` per GPU.
    Returns measured and predicted seconds, the error, the measured and predicted layer pass
    and the launches of one layer pass."""
    row = dict(base, **change)
    row["measured_iteration_s"] = f"{measured_step(row, tokens_per_s):.4f}"
    meas_pass, pred_pass, err = measured_pass(row)
    n, _ = launch_load(row)
    return {"measured": float(row["measured_iteration_s"]),
            "predicted": float(row["measured_iteration_s"]) * (1 + err / 100), "error": err,
            "measured_pass": meas_pass, "predicted_pass": pred_pass, "launches": n}


def print_releases() -> None:
    rows = recipe_rows()
    print(f"\nrelease by release ({ARCHIVE}; tokens/s/GPU -> s per step; ms per layer pass)")
    for title, points in RELEASES.items():
        print(f"  {title}")
        print(f"    {'release and layout':48s} {'tok/s':>6s} {'meas s':>7s} {'pred s':>7s} "
              f"{'err %':>6s} {'meas ms':>7s} {'pred ms':>7s} {'launch':>6s} {'us/l':>5s}")
        for tag, rid, change, tok in points:
            g = release_point(rows[rid], change, tok)
            print(f"    {tag:48s} {tok:6d} {g['measured']:7.2f} {g['predicted']:7.2f} "
                  f"{g['error']:+6.1f} {1e3 * g['measured_pass']:7.2f} "
                  f"{1e3 * g['predicted_pass']:7.2f} {int(g['launches']):6d} "
                  f"{1e6 * g['measured_pass'] / g['launches']:5.1f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--releases" in argv:
        print_releases()
        return 0
    print("measured rows (ms per layer pass; 'outside' = predicted time outside the layers)")
    got = {}
    for file, rid in ROWS:
        meas, pred, err = measured_pass(_row(file, rid))
        got[rid] = (meas, pred)
        print(f"  {rid:44s} measured {1e3 * meas:6.2f}  predicted {1e3 * pred:6.2f}  "
              f"row error {err:+6.1f} %")
    (m1, p1), (m2, p2) = got[ROWS[0][1]], got[ROWS[1][1]]
    print(f"  25.11 / 26.04 per layer pass: measured x{m1 / m2:.2f}, predicted x{p1 / p2:.2f}; "
          f"difference measured {1e3 * (m1 - m2):.2f} ms, predicted {1e3 * (p1 - p2):.2f} ms")
    print("\nladder from the 25.11 row (trainsim, ms per layer pass)")
    base = _row(*ROWS[0])
    print(f"  {'setting':36s} {'layer':>6s} " + " ".join(f"{p:>6s}" for p in
                                                      (*moe_parts.PARTS, "host")) + "  launches  x30us    gpu")
    for tag, change in LADDER:
        g = moe_parts.parts({**base, **change})
        assert g is not None
        n, gpu_s = launch_load({**base, **change})
        print(f"  {tag:36s} {1e3 * float(g['layer']):6.2f} " +  # type: ignore[arg-type]
              " ".join(f"{1e3 * float(g[p]):6.2f}" for p in  # type: ignore[arg-type]
                       (*moe_parts.PARTS, "host")) +
              f"  {n:8d} {1e3 * n * HOST_S_PER_KERNEL:6.2f} {1e3 * gpu_s:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
