"""Published DeepEP / HybridEP exchange measurements against trainsim's own pricing of the same
exchange.

    python benchmarks/moe_exchange.py [--csv benchmarks/moe_exchange_published.csv]

Each row of ``benchmarks/moe_exchange_published.csv`` is one published figure (source and tag in
the row). For the kernels Megatron-core's flex dispatcher calls (DeepEP V1 normal kernels,
HybridEP), this builds a one-layer MoE config of the benchmark's shape on the benchmark's
cluster, takes the dispatch or combine ``Comm`` op the workload emits for it
(``workload.moe_block.moe_block``) and prices it with ``Pricer(cfg).comm_time``.

The published figure is a bandwidth over a byte count the benchmark defines, so the measured
time is that byte count over the bandwidth. The byte counts depend on the benchmark's random
routing; they are re-drawn here the way the benchmark draws them (fixed seed):
- ``rdma_send`` (deepseek-ai/DeepEP v1.2.1 tests/test_internode.py ``num_rdma_token_sent``;
  hybrid-ep tests/utils.py ``count_rdma_send_from_routing_map``): copies of a token to each
  distinct destination node, its own node included, times hidden x 2 bytes, x (1 + 4/128) / 2
  for fp8 (the per-128 fp32 scales); the combine counts the same tokens at 2 bytes;
- ``nvl_recv`` (tests/test_intranode.py): tokens the rank receives, one per source token with
  an expert on the rank, at the same bytes per token.
DeepEP V1's internode test routes each token to the top ``num_topk_groups`` = min(nodes, 4)
nodes by their best score, then the top-8 experts there (``create_grouped_scores``); the
intranode test and HybridEP's route uniformly.

A row is ``timed`` over the exchange kernel alone (``kernel``: the hybrid-ep README's "Kernel
Only", Kineto's ``dispatch_kernel``/``combine_kernel``) or over the Torch API call
(``torch_api``: CUDA events around ``buffer.dispatch``/``buffer.combine``). A HybridEP Torch-API
row is priced as the op list its plain API runs around the kernel
(``workload.moe_dispatch.hybridep_api_ops`` with ``permute=False``: the routing-map all-gather,
the metadata preprocessing and the host's wait for the received-token count, the staging copy,
the copies out of and into the registered buffer), with the host's launch waits
(``Pricer.price``); DeepEP V1's Torch API writes into its output tensors directly, and its
notify and layout kernels (tens of us) are not priced, so its rows price the kernel alone.

The hybrid-ep README's B200 and GB200 tables (one NVLink domain: ``nvl_recv`` bytes, the
rank's own tokens included) give DeepEP V1's intranode kernels at 16-48 SMs and HybridEP at 16
and 32 SMs over 8-36 ranks (GB200 with USE_MNNVL); a row's ``sms`` sets
``moe_deepep_num_sms`` / ``moe_hybridep_num_sms``. Its fp8 HybridEP columns are left out
(Megatron-core's HybridEP dispatch is 16-bit), and so are its GB200 DeepEP rows at 16 and 24
ranks (DeepEP's internode kernels over MNNVL, whose byte count the README does not state).
``benchmarks/fit_ep_exchange.py`` fits ``collectives.ep_kernels``' two constants on these rows.

Rows of other kernels (DeepEP V2, the low-latency inference kernels) are printed as reference
and left out of the MAPE: no training workload emits them. Nothing here feeds trainsim.
"""

from __future__ import annotations

import argparse
import csv
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from trainsim.catalog import gpu
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.pricing import Pricer
from trainsim.workload.moe_block import moe_block
from trainsim.workload.moe_dispatch import hybridep_api_ops
from trainsim.workload.ops import Comm
from trainsim.workload.shard import shard_of

HERE = Path(__file__).resolve().parent
CSV = HERE / "moe_exchange_published.csv"
PRICED = {"deepep_v1_normal": "deepep", "hybridep": "hybridep"}
FP8_FACTOR = (1 + 4 / 128) / 2  # bytes of an fp8 element with its scale, over bf16's 2
SEED = 0


@dataclass(frozen=True)
class Routing:
    nodes_per_token: float  # distinct destination nodes, own included
    ranks_per_token: float  # distinct destination ranks


@functools.cache
def draw_routing(tokens: int, experts: int, topk: int, ranks: int, per_node: int,
                 topk_groups: int | None) -> Routing:
    """The benchmark's routing, re-drawn: |N(0,1)| + 1 scores, grouped by node when
    ``topk_groups`` is set (DeepEP tests/test_internode.py), top-k experts. A function of its
    arguments (the seed is fixed), drawn once for each: the 97 priced rows have 12 shapes."""
    rng = np.random.default_rng(SEED)
    nodes = max(1, ranks // per_node)
    scores = np.abs(rng.standard_normal((tokens, experts))) + 1
    if topk_groups:
        grouped = scores.reshape(tokens, nodes, -1)
        best = np.argsort(-grouped.max(axis=2), axis=1)[:, :topk_groups]
        mask = np.zeros((tokens, nodes), dtype=bool)
        np.put_along_axis(mask, best, True, axis=1)
        scores = np.where(mask[:, :, None], grouped, 0.0).reshape(tokens, experts)
    top = np.argsort(-scores, axis=1)[:, :topk]
    rank = top // (experts // ranks)
    node = rank // per_node
    distinct = [len(set(r)) for r in rank.tolist()]
    distinct_nodes = [len(set(n)) for n in node.tolist()]
    return Routing(float(np.mean(distinct_nodes)), float(np.mean(distinct)))


def config(row: dict[str, str]) -> RunConfig:
    ep, per_node = int(row["ep"]), int(row["gpus_per_node"])
    nodes = max(1, ep // per_node)
    groups = int(row["topk_groups"]) if row["topk_groups"] else None
    hidden = int(row["hidden"])
    model = ModelConfig(name="exchange", hidden_size=hidden, num_layers=1,
                        num_attention_heads=56, ffn_hidden_size=2048, activation="swiglu",
                        num_experts=int(row["experts"]), moe_router_topk=int(row["topk"]),
                        moe_ffn_hidden_size=2048,
                        moe_router_group_topk=groups if groups and groups < nodes else None)
    cluster = ClusterConfig(gpu=gpu(row["gpu"]), num_gpus=ep, gpus_per_node=per_node,
                            nic_bw_Bps=float(row["nic_gbit_s"]) * 1e9 / 8)
    training = TrainingConfig(global_batch_size=ep, micro_batch_size=1,
                              seq_length=int(row["tokens"]))
    dispatcher = PRICED[row["kernel"]]
    sms = {f"moe_{dispatcher}_num_sms": int(row["sms"])} if row["sms"] else {}
    parallel = ParallelConfig(expert_model_parallel_size=ep,
                              moe_token_dispatcher_type=dispatcher,
                              moe_dispatch_fp8=row["dispatch_dtype"] == "fp8", **sms)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def predicted_s(row: dict[str, str]) -> float:
    """Trainsim's time of the exchange op the workload emits for this shape, with the plain
    HybridEP Torch API's own work around it where the row times that API."""
    return priced_s(exchange(row))


Exchange = tuple[RunConfig, Comm, "tuple[list, list] | None"]
"""A row's config, the exchange op its workload emits, and the ops the plain HybridEP Torch API
runs before and after it where the row times that API (None: the kernel alone)."""


def exchange(row: dict[str, str]) -> Exchange:
    """The workload side of :func:`predicted_s` (no pricing constant is read here)."""
    cfg = config(row)
    sh = shard_of(cfg)
    ops: list = []
    moe_block(ops, cfg, sh)
    name = f"moe.{row['phase']}_all_to_all"
    op = next(o for o in ops if getattr(o, "name", "") == name)
    if row["timed"] == "kernel" or row["kernel"] != "hybridep":
        return cfg, op, None
    return cfg, op, hybridep_api_ops(cfg, sh.norm_tokens, row["phase"], permute=False)


def priced_s(ex: Exchange) -> float:
    """The pricing side of :func:`predicted_s`: a new ``Pricer``, so the constants in force now."""
    cfg, op, around = ex
    pricer = Pricer(cfg)
    if around is None:
        return pricer.comm_time(op)
    before, after = around
    return pricer.price([*before, op, *after]).duration_s


def measured_s(row: dict[str, str]) -> float:
    """The published bandwidth turned back into the time of one exchange."""
    ep, per_node, tokens = int(row["ep"]), int(row["gpus_per_node"]), int(row["tokens"])
    groups = int(row["topk_groups"]) if row["topk_groups"] else None
    r = draw_routing(tokens, int(row["experts"]), int(row["topk"]), ep, per_node, groups)
    per_token = int(row["hidden"]) * 2.0
    if row["phase"] == "dispatch" and row["dispatch_dtype"] == "fp8":
        per_token *= FP8_FACTOR
    if row["normalisation"] == "rdma_send":
        counted = tokens * r.nodes_per_token * per_token
    elif row["normalisation"] == "nvl_recv":  # every rank sends `tokens`: a rank receives
        counted = tokens * r.ranks_per_token * per_token
    else:
        raise ValueError(f"normalisation {row['normalisation']!r} not priced")
    return counted / (float(row["published"]) * 1e9)


def load(path: Path = CSV) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def check(rows: list[dict[str, str]]) -> list[tuple[dict[str, str], float, float]]:
    """(row, predicted s, measured s) for every row a training workload emits."""
    return [(r, predicted_s(r), measured_s(r)) for r in rows if r["kernel"] in PRICED]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", type=Path, default=CSV)
    args = ap.parse_args(argv)
    rows = load(args.csv)
    out = check(rows)
    print(f"{'kernel':18} {'gpu':14} {'ep':>4} {'phase':9} {'timed':9} {'pub':>7} "
          f"{'meas_us':>8} {'pred_us':>8} {'err%':>7}")
    errs: dict[str, list[float]] = {}
    for r, pred, meas in out:
        err = (pred - meas) / meas * 100
        errs.setdefault(f"{r['kernel']} {r['timed']}", []).append(abs(err))
        print(f"{r['kernel']:18} {r['gpu']:14} {r['ep']:>4} {r['phase']:9} {r['timed']:9} "
              f"{r['published']:>7} {meas * 1e6:8.1f} {pred * 1e6:8.1f} {err:+7.1f}")
    every = [e for v in errs.values() for e in v]
    for kernel, v in errs.items():
        print(f"MAPE {kernel}: {sum(v) / len(v):.1f} % ({len(v)} rows)")
    by_gpu: dict[str, list[float]] = {}
    for r, pred, meas in out:
        by_gpu.setdefault(r["gpu"], []).append(abs(pred / meas - 1) * 100)
    for name, v in by_gpu.items():
        print(f"MAPE {name}: {sum(v) / len(v):.1f} % ({len(v)} rows)")
    print(f"MAPE all: {sum(every) / len(every):.1f} % ({len(every)} rows)")
    ref = [r for r in rows if r["kernel"] not in PRICED]
    print(f"reference rows not priced (kernels no training workload emits): {len(ref)}")
    for r in ref:
        print(f"  {r['kernel']:22} ep {r['ep']:>4} {r['phase']:9} {r['published']} {r['metric']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
