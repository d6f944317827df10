"""Diagnostic (46th session, mtp46): DeepSeek-V3's multi-token-prediction projection
(``eh_proj``, 2h -> h after the concat) priced as Megatron-core shards it, against trainsim's
pricing (one h x 2h GEMM on every rank at every TP, ``trainsim.chunks.mtp_projection``).

How Megatron-core runs it (NVIDIA/Megatron-LM@d98e8a64):
megatron/core/transformer/multi_token_prediction.py L773-L780 (the spec's ``eh_proj`` is the
backend's ``column_parallel_linear``: ``TEColumnParallelLinear``, extensions/
transformer_engine_spec_provider.py L43-L45), L1174-L1187 (built 2h -> h, ``gather_output=
False``, buffer ``mtp_eh_proj``), L1342-L1358 (``_concat_embeddings``: the linear, then
``gather_from_tensor_model_parallel_region``, then under SP ``scatter_to_sequence_parallel_
region``), L1395-L1397 (inside the module's fp8 context); tensor_parallel/mappings.py L84-L100
(``_gather_along_last_dim``: all-gather, then ``torch.cat`` along hidden, a copy), L40-L57 (its
backward: ``.contiguous()`` of the rank's columns), L60-L81 (the SP split, a ``.contiguous()``
slice), L295-L297 (its backward: all-gather along the sequence); extensions/
transformer_engine.py L1176-L1186 (``TELinear`` turns TP overlap off for a buffer other than
qkv, proj, fc1, fc2). The linear's own SP input gather, backward re-gather and reduce-scatter
(or without SP the input gradient's all-reduce), and TE's fp8 casts are the layers'
column-parallel ones (``workload.shard.tp_enter`` / ``linear``, ``workload.layers.backward_of``).

usage, from the repository root:
  PYTHONPATH=src python benchmarks/mtp46_eh_proj.py          # per-op times, each MTP row
  PYTHONPATH=src python benchmarks/mtp46_eh_proj.py --rows   # + the rows re-simulated both ways
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from trainsim.config import RunConfig
from trainsim.errors import TrainsimError
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.layers import backward_of
from trainsim.workload.ops import ACT_BYTES as ACT
from trainsim.workload.ops import Comm, Elementwise, Op
from trainsim.workload.shard import Shard, linear, shard_of, tp_enter

ROOT = Path(__file__).resolve().parents[1]
FILES = (ROOT.parent / "shared/validation/training_public.csv",
         ROOT / "benchmarks/training_heldout.csv", ROOT / "benchmarks/training_mcore_dsv3_gb200.csv")
NAME = "mtp_proj"


def sharded_eh_proj(cfg: RunConfig, sh: Shard) -> tuple[list[Op], list[Op]]:
    """Forward and backward ops of one MTP module's ``eh_proj`` as Megatron-core runs it."""
    h, T = cfg.model.hidden_size, sh.tokens
    lin: list[Op] = []
    tp_enter(lin, sh, 2 * h, NAME, in_tp_overlap=False)
    linear(lin, sh, NAME, T, h // sh.tp, 2 * h, seq_parallel="gather")
    out_f: list[Op] = []
    out_b: list[Op] = []
    if sh.tp > 1:
        out_f += [Comm(f"{NAME}.output_all_gather", "all_gather", T * h * ACT, "tp",
                       in_tp_overlap=False),
                  Elementwise(f"{NAME}.output_cat", bytes=2 * T * h * ACT, kernel="copy")]
        if sh.sp:
            out_f.append(Elementwise(f"{NAME}.sp_split", bytes=2 * T / sh.tp * h * ACT,
                                     kernel="copy"))
            out_b.append(Comm(f"{NAME}.sp_split.bwd", "all_gather", T * h * ACT, "tp",
                              in_tp_overlap=False))
        out_b.append(Elementwise(f"{NAME}.output_split.bwd", bytes=2 * T * h / sh.tp * ACT,
                                 kernel="copy"))
    bwd = [replace(op, in_tp_overlap=False) if isinstance(op, Comm) else op
           for op in backward_of(lin, sh)]
    return lin + out_f, out_b + bwd


def mtp_rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for f in FILES:
        for r in csv.DictReader(open(f)):
            if "deepseek-v3" in (r.get("model") or "") or "deepseek-v3" in r["id"]:
                out.append((f.name, r))
    return out


def config(r: dict[str, str]) -> RunConfig | None:
    for chosen in ({}, {"sequence_parallel": True}):  # MoE at TP > 1 runs SP (the tuner's pick)
        try:
            return row_config(r, chosen)
        except TrainsimError:
            continue
    return None


def per_op(r: dict[str, str]) -> None:
    from trainsim import chunks
    cfg = config(r)
    if cfg is None or not cfg.model.mtp_num_layers:
        return
    p, sh = Pricer(cfg), shard_of(cfg)
    ms = lambda ops: p.price(ops).duration_s * 1e3  # noqa: E731
    of, ob = chunks.mtp_projection(cfg, sh)
    nf, nb = sharded_eh_proj(cfg, sh)
    print(f"{r['id']}: tp {sh.tp} sp {sh.sp} {sh.dtype} {sh.tokens} tokens, depth "
          f"{cfg.model.mtp_num_layers}; per micro-batch and depth: trainsim fwd "
          f"{ms(of):.3f} bwd {ms(ob):.3f} ms, sharded fwd {ms(nf):.3f} bwd {ms(nb):.3f} ms")
    for op in nf + nb:
        print(f"    {op.name:36s} {ms([op]):.3f} ms")


def simulate(variant: str, ids: list[str]) -> None:
    """Each row's predicted iteration time with the projection as ``variant`` prices it."""
    from trainsim import chunks
    if variant == "sharded":
        chunks.mtp_projection = sharded_eh_proj
    rows = {r["id"]: r for _, r in mtp_rows()}
    print(json.dumps({i: predict_training_row(rows[i]).predicted for i in ids}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", action="store_true")
    ap.add_argument("--simulate", choices=("trainsim", "sharded"))
    ap.add_argument("ids", nargs="*")
    a = ap.parse_args()
    if a.simulate:
        simulate(a.simulate, a.ids)
        return
    rows = mtp_rows()
    for _, r in rows:
        per_op(r)
    if not a.rows:
        return
    ids = [r["id"] for f, r in rows if f == FILES[0].name or f == FILES[1].name]
    got = {v: json.loads(subprocess.run([sys.executable, __file__, "--simulate", v, *ids],
                                        check=True, capture_output=True, text=True).stdout)
           for v in ("trainsim", "sharded")}
    meas = {r["id"]: float(r["measured_iteration_s"]) for _, r in rows if r["id"] in ids}
    print(f"{'row':40s} {'measured':>9s} {'trainsim':>9s} {'err':>7s} {'sharded':>9s} {'err':>7s}")
    for i in ids:
        a_, b_ = got["trainsim"][i], got["sharded"][i]
        print(f"{i:40s} {meas[i]:9.3f} {a_:9.3f} {100 * (a_ / meas[i] - 1):+7.2f} "
              f"{b_:9.3f} {100 * (b_ / meas[i] - 1):+7.2f}")


if __name__ == "__main__":
    main()
