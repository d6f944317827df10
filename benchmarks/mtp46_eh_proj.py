"""Diagnostic (46th session, mtp46): DeepSeek-V3's multi-token-prediction projection
(``eh_proj``, 2h -> h after the concat) priced as Megatron-core shards it (since the 46th
session trainsim's own pricing, ``workload.head.mtp_eh_proj``), against the pricing it replaced
(one h x 2h GEMM on every rank at every TP, ``full_eh_proj`` here).

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
from pathlib import Path

from trainsim.config import RunConfig
from trainsim.errors import TrainsimError
from trainsim.pricing import Pricer
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.head import mtp_eh_proj as sharded_eh_proj
from trainsim.workload.layers import backward_of
from trainsim.workload.ops import Gemm, Op
from trainsim.workload.shard import Shard, shard_of

ROOT = Path(__file__).resolve().parents[1]
FILES = (ROOT.parent / "shared/validation/training_public.csv",
         ROOT / "benchmarks/training_heldout.csv", ROOT / "benchmarks/training_mcore_dsv3_gb200.csv")
NAME = "mtp_proj"


def full_eh_proj(cfg: RunConfig, sh: Shard) -> tuple[list[Op], list[Op]]:
    """The pricing trainsim had before the 46th session: one full h x 2h GEMM and its backward
    on every rank at every TP, no collective."""
    h = cfg.model.hidden_size
    proj: list[Op] = [Gemm(NAME, sh.tokens, h, 2 * h, sh.dtype, fp8_fast_accum=sh.dtype == "fp8")]
    return proj, backward_of(proj, sh)


def mtp_rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for f in FILES:
        with open(f, newline="") as fh:
            out += [(f.name, r) for r in csv.DictReader(fh)
                    if "deepseek-v3" in (r.get("model") or "") or "deepseek-v3" in r["id"]]
    return out


def config(r: dict[str, str]) -> RunConfig | None:
    for chosen in ({}, {"sequence_parallel": True}):  # MoE at TP > 1 runs SP (the tuner's pick)
        try:
            return row_config(r, chosen)
        except TrainsimError:
            continue
    return None


def per_op(r: dict[str, str]) -> None:
    cfg = config(r)
    if cfg is None or not cfg.model.mtp_num_layers:
        return
    p, sh = Pricer(cfg), shard_of(cfg)
    def ms(ops: list[Op]) -> float:
        return p.price(ops).duration_s * 1e3

    of, ob = full_eh_proj(cfg, sh)
    nf, nb = sharded_eh_proj(cfg, sh)
    print(f"{r['id']}: tp {sh.tp} sp {sh.sp} {sh.dtype} {sh.tokens} tokens, depth "
          f"{cfg.model.mtp_num_layers}; per micro-batch and depth: unsharded fwd "
          f"{ms(of):.3f} bwd {ms(ob):.3f} ms, sharded fwd {ms(nf):.3f} bwd {ms(nb):.3f} ms")
    for op in nf + nb:
        print(f"    {op.name:36s} {ms([op]):.3f} ms")


def simulate(variant: str, ids: list[str]) -> None:
    """Each row's predicted iteration time with the projection as ``variant`` prices it."""
    from trainsim import chunks
    if variant == "unsharded":
        chunks.mtp_eh_proj = full_eh_proj
    rows = {r["id"]: r for _, r in mtp_rows()}
    print(json.dumps({i: predict_training_row(rows[i]).predicted for i in ids}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", action="store_true")
    ap.add_argument("--simulate", choices=("unsharded", "sharded"))
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
           for v in ("unsharded", "sharded")}
    meas = {r["id"]: float(r["measured_iteration_s"]) for _, r in rows if r["id"] in ids}
    print(f"{'row':40s} {'measured':>9s} {'unsharded':>9s} {'err':>7s} {'sharded':>9s} {'err':>7s}")
    for i in ids:
        a_, b_ = got["unsharded"][i], got["sharded"][i]
        print(f"{i:40s} {meas[i]:9.3f} {a_:9.3f} {100 * (a_ / meas[i] - 1):+7.2f} "
              f"{b_:9.3f} {100 * (b_ / meas[i] - 1):+7.2f}")


if __name__ == "__main__":
    main()
