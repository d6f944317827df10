"""Inspectable output of a capture: per-submodule FLOPs, bytes, predicted time and share of
the layer (a table and JSON), the per-rank ops with their collectives, and how the capture
compares with trainsim's analytical layer (FLOPs) and memory model (activation bytes).

Predicted times are :class:`trainsim.compute.RooflineModel` times of each recorded kernel on
one GPU of the run (unsharded), so a row's share is its share of one captured layer.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from trainsim.capture.capture import Capture
from trainsim.capture.graph import _gemm_mnk, layer_ops
from trainsim.capture.kernels import ATTENTION_BWD, KernelRecord
from trainsim.compute import RooflineModel
from trainsim.config import GPUSpec, RunConfig
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.ops import Attention, Comm, Elementwise, Gemm, Op
from trainsim.workload.shard import shard_of

PH = {"forward": "fwd", "backward": "bwd"}


def kernel_op(rec: KernelRecord) -> Gemm | Attention | Elementwise:
    """The unsharded trainsim op a recorded kernel maps to (for pricing)."""
    if rec.kind == "gemm":
        m, n, k, batch = _gemm_mnk(rec)
        dtype = rec.inputs[0].dtype
        return Gemm(rec.short_op, m=m, n=n, k=k, batch=batch,
                    dtype=dtype if dtype in ("bf16", "fp16", "fp32") else "bf16")
    if rec.kind == "attention":
        named = [t.shape for t in rec.inputs]
        if rec.short_op in ATTENTION_BWD:  # grad_out, query, key, value, ...
            q, k = named[1], named[2]
        else:
            q, k = named[0], named[1]
        return Attention(rec.short_op, batch=q[0], heads=q[1], kv_heads=k[1], q_len=q[2],
                         kv_len=k[2], head_dim=q[3], causal=bool(rec.args.get("is_causal")),
                         backward=rec.short_op in ATTENTION_BWD)
    return Elementwise(rec.short_op, bytes=rec.bytes)


def single_device(cfg: RunConfig) -> RunConfig:
    """``cfg`` on one GPU (no parallelism, no recompute): what a capture records."""
    from dataclasses import replace

    from trainsim.config import ParallelConfig

    return replace(cfg, parallel=ParallelConfig(),
                   training=replace(cfg.training, global_batch_size=cfg.training.micro_batch_size),
                   cluster=cfg.cluster.with_gpus(1))


def analytical_layer_flops(cfg: RunConfig, moe: bool) -> float:
    """Matmul + attention FLOPs of trainsim's analytical layer, forward + backward."""
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh, moe=moe)
    return sum(op.flops for op in fwd + backward_of(fwd, sh) if isinstance(op, (Gemm, Attention)))


def summarize(cap: Capture, cfg: RunConfig | None, gpu: GPUSpec,
              include_kernels: bool = False) -> dict[str, Any]:
    """Everything ``trainsim capture`` shows, as plain data."""
    from trainsim.memory import activation_bytes_per_layer
    from trainsim.simulator import Pricer

    roof = RooflineModel(gpu)
    times = {k.index: roof.time(kernel_op(k)) for k in cap.kernels}
    sections: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for k in cap.kernels:
        s = sections[cap.sections[k.index]]
        s["kernels"] += 1
        s[f"flops_{PH[k.phase]}"] += k.flops
        s[f"bytes_{PH[k.phase]}"] += k.bytes
        s["time_s"] += times[k.index]
    layers = {}
    for path in cap.layers:
        kernels = cap.section_kernels(path)
        layer_time = sum(times[k.index] for k in kernels) or 1.0
        subs: dict[str, dict[str, Any]] = {}
        for k in kernels:
            rel = k.module[len(path) + 1:] if k.module.startswith(path + ".") else "(layer)"
            row = subs.setdefault(rel, {"submodule": rel, "kernels": 0, "flops_fwd": 0.0,
                                        "flops_bwd": 0.0, "bytes": 0.0, "time_s": 0.0, "ops": {}})
            row["kernels"] += 1
            row[f"flops_{PH[k.phase]}"] += k.flops
            row["bytes"] += k.bytes
            row["time_s"] += times[k.index]
            key = f"{PH[k.phase]} {k.short_op}"
            op = row["ops"].setdefault(key, {"count": 0, "flops": 0.0, "bytes": 0.0, "time_s": 0.0})
            op["count"] += 1
            op["flops"] += k.flops
            op["bytes"] += k.bytes
            op["time_s"] += times[k.index]
        for row in subs.values():
            row["share"] = row["time_s"] / layer_time
        moe = path in cap.moe_layers
        entry: dict[str, Any] = {
            "moe": moe, "flops": cap.layer_flops(path), "time_s": layer_time,
            "activation_bytes": cap.activation_bytes[path],
            "submodules": sorted(subs.values(), key=lambda r: -r["time_s"]),
        }
        if cfg is not None:  # against the analytical layer on one GPU, as captured
            one = single_device(cfg)
            entry["analytical_flops"] = analytical_layer_flops(one, moe)
            model = activation_bytes_per_layer(one, moe=moe)
            entry["memory_model_activation_bytes"] = model
            entry["memory_model_separate_qkv_bytes"] = activation_bytes_per_layer(
                one, moe=moe, separate_qkv=True)
        layers[path] = entry
    out: dict[str, Any] = {
        "source": cap.source, "micro_batch_size": cap.batch, "seq_length": cap.seq,
        "dtype": cap.dtype, "capture_s": cap.capture_s, "gpu": gpu.name,
        "full_num_layers": cap.full_num_layers, "captured_layers": cap.layers,
        "patches": list(cap.patches), "kernels": len(cap.kernels), "unmapped_ops": cap.unmapped,
        "model_flops_per_microbatch": cap.model_flops(),
        "sections": {k: dict(v) for k, v in sections.items()}, "layers": layers,
    }
    if cfg is not None:
        pricer = Pricer(cfg)
        sh = shard_of(cfg)
        rank = {}
        for path in cap.layers:
            ops = layer_ops(cap, path, cfg, sh)
            rank[path] = [_op_row(op, pricer) for op in ops]
        out["rank_ops"] = rank
        p = cfg.parallel
        out["parallel"] = {"tp": p.tp, "sp": p.sequence_parallel, "cp": p.cp, "ep": p.ep,
                           "etp": p.etp}
    if include_kernels:
        out["kernel_list"] = [dict(k.to_dict(), section=cap.sections[k.index],
                                   time_s=times[k.index]) for k in cap.kernels]
    return out


def _op_row(op: Op, pricer: Any) -> dict[str, Any]:
    if isinstance(op, Comm):
        return {"name": op.name, "kind": op.kind, "group": op.group, "bytes": op.bytes,
                "time_s": pricer.comm_time(op), "overlapped": op.overlap_with_previous}
    row: dict[str, Any] = {"name": op.name, "kind": type(op).__name__.lower(),
                           "flops": op.flops, "bytes": op.bytes,
                           "time_s": pricer.compute.time(op)}
    if isinstance(op, Gemm):
        row["shape"] = [op.batch, op.m, op.n, op.k]
    elif isinstance(op, Attention):
        row["shape"] = [op.batch, op.heads, op.kv_heads, op.q_len, op.kv_len, op.head_dim]
    return row


def render(summary: dict[str, Any]):
    """Rich renderables for the terminal."""
    from rich.console import Group
    from rich.markup import escape
    from rich.table import Table

    parts: list[Any] = []
    head = Table(title=f"capture: {escape(str(summary['source']))}", show_header=False,
                 title_justify="left")
    head.add_column("k", style="bold")
    head.add_column("v")
    head.add_row("tokens", f"{summary['micro_batch_size']} x {summary['seq_length']} "
                 f"({summary['dtype']}), {summary['kernels']} kernels in "
                 f"{summary['capture_s']:.1f} s on the meta device")
    head.add_row("layers", f"{', '.join(summary['captured_layers'])} captured of "
                 f"{summary['full_num_layers']}")
    head.add_row("model FLOPs / micro-batch",
                 f"{summary['model_flops_per_microbatch'] / 1e12:.2f} TFLOP"
                 " (fwd + bwd, matmul + attention)")
    for path, layer in summary["layers"].items():
        act = layer["activation_bytes"]
        line = f"{layer['flops'] / 1e12:.3f} TFLOP, activations {act / 2**20:.1f} MiB"
        if "analytical_flops" in layer:
            a = layer["analytical_flops"]
            sep = layer["memory_model_separate_qkv_bytes"]
            line += (f" | analytical {a / 1e12:.3f} TFLOP ({100 * (layer['flops'] / a - 1):+.2f}%),"
                     " "
                     f"memory model {layer['memory_model_activation_bytes'] / 2**20:.1f} MiB, "
                     f"{sep / 2**20:.1f} with separate Q/K/V ({100 * (act / sep - 1):+.1f}%)")
        head.add_row(path, line)
    head.add_row("unmapped ops", ", ".join(summary["unmapped_ops"]) or "none")
    if summary["patches"]:
        head.add_row("kernel patches", "; ".join(summary["patches"]))
    parts.append(head)
    sec = Table(title="sections (unsharded, one micro-batch)", title_justify="left")
    for col in ("section", "kernels", "fwd GFLOP", "bwd GFLOP", "GB moved", "time (ms)"):
        sec.add_column(col, justify="right" if col != "section" else "left")
    for name, s in summary["sections"].items():
        sec.add_row(name, f"{s['kernels']:.0f}", f"{s.get('flops_fwd', 0) / 1e9:,.1f}",
                    f"{s.get('flops_bwd', 0) / 1e9:,.1f}",
                    f"{(s.get('bytes_fwd', 0) + s.get('bytes_bwd', 0)) / 1e9:.2f}",
                    f"{s['time_s'] * 1e3:.3f}")
    parts.append(sec)
    for path, layer in summary["layers"].items():
        t = Table(title=f"{path} by submodule (roofline on {summary['gpu']}, unsharded)",
                  title_justify="left")
        for col in ("submodule", "kernels", "fwd GFLOP", "bwd GFLOP", "GB moved", "time (ms)",
                    "share"):
            t.add_column(col, justify="right" if col != "submodule" else "left")
        for r in layer["submodules"]:
            t.add_row(r["submodule"], str(r["kernels"]), f"{r['flops_fwd'] / 1e9:,.1f}",
                      f"{r['flops_bwd'] / 1e9:,.1f}", f"{r['bytes'] / 1e9:.3f}",
                      f"{r['time_s'] * 1e3:.3f}", f"{100 * r['share']:.1f}%")
        parts.append(t)
    for path, ops in summary.get("rank_ops", {}).items():
        p = summary["parallel"]
        t = Table(title=f"{path}: forward ops of one rank (TP {p['tp']} SP {p['sp']} CP {p['cp']} "
                  f"EP {p['ep']})", title_justify="left")
        for col in ("op", "kind", "shape / group", "MB", "time (us)"):
            t.add_column(col, justify="right" if col in ("MB", "time (us)") else "left")
        for r in ops:
            shape = r.get("group") or "x".join(str(x) for x in r.get("shape", []))
            t.add_row(r["name"], r["kind"], shape, f"{r['bytes'] / 1e6:.1f}",
                      f"{r['time_s'] * 1e6:.1f}")
        parts.append(t)
    return Group(*parts)
