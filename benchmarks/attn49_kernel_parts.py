"""Attention's measured kernels apart from the harness (issue 17; 49th session, attn49).

The 41st session's H200 run 2 (``h200_2026-11-27_s41/run2_device_checks41.json``,
``attn_kernels``: torch.profiler, q, k, v separate (b, h, s, d) leaves, causal, 16k tokens at
hidden 2,048, head dim 64 / 128 / 256, s 512 / 2k / 8k, SDPA's FA2 and cuDNN backends) lists every
kernel a call ran. A backward is the main kernel, the kernel library's own helpers (the
``rowsum(dO * O)`` pass and the fp32 dQ conversion: what ``ATTN_ROW_OVERHEAD_KEYS`` stands in for)
and, for SDPA's FA2 backend only, two ``direct_copy`` kernels (~93 us each at 16k x 2,048): the
``.contiguous()`` of tensors this harness hands over in (b, h, s, d) memory, which a framework
holding (b, s, h, d) activations does not run. This script prices each case's kernels with the
roofline as trainsim validate does and sets them beside

* ``kernels``: main kernel (+ helpers for a backward), the kernel library's own work;
* ``kernels + copies``: as above with the FA2 backend's copies (what SDPA on this layout runs);
* the same shape's row of ``kernels_h200_s41.csv`` (run 1: CUDA events around eager calls on
  views of one packed qkv buffer, so its backward also runs autograd's unbind / stack).

It also reads the cuDNN kernels' names: ``..._flash_fprop_wgmma_f16_knob_7_64x128x{D}_4x1x1`` at
every head dim, the kernel whose head-dim-64 / 128 source NVIDIA/cudnn-frontend publishes
(v1.19.0, include/cudnn_frontend/experimental/sm90_sdpa_prefill_engine.h and
generated/sdpa/sm90/prefill/full_seqlens/d{64,128}_fprop_kernel.h): see ``cudnn_fwd_tile``.

    PYTHONPATH=src python benchmarks/attn49_kernel_parts.py
    PYTHONPATH=src python benchmarks/attn49_kernel_parts.py --refit-copies  # the refit, ~1 min
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

RUN2 = HERE / "h200_2026-11-27_s41" / "run2_device_checks41.json"
RUN1 = HERE / "h200_2026-11-27_s41" / "kernels_h200_s41.csv"
TOKENS, HIDDEN = 16384, 2048
CASE = re.compile(r"^(flash2|cudnn)-hd(\d+)-causal-s(\d+)$")
CUDNN_NAME = re.compile(r"sdpa_sm90_flash_(fprop|bprop)_wgmma_f16_knob_\d+_(\d+)x(\d+)x(\d+)_")


def kernel_parts(kernels: dict[str, dict]) -> dict[str, float]:
    """us a call of one case's kernels by role: fwd, bwd (main), helpers, copies."""
    parts = {"fwd": 0.0, "bwd": 0.0, "helpers": 0.0, "copies": 0.0}
    for name, k in kernels.items():
        us = float(k["us_per_step"])  # the profile's total over 5 calls / 5: per call
        if "direct_copy" in name:
            parts["copies"] += us
        elif "dot_do_o" in name or "convert_dq" in name:
            parts["helpers"] += us
        elif "fwd_kernel" in name or "fprop" in name:
            parts["fwd"] += us
        elif "bwd_dq_dk_dv" in name or "bprop" in name:
            parts["bwd"] += us
    return parts


def cudnn_tiles(cases: dict[str, dict]) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(direction, head dim) -> the (M, N, K) in the cuDNN kernel's name."""
    out = {}
    for case, kernels in cases.items():
        m = CASE.match(case)
        for name in kernels:
            t = CUDNN_NAME.search(name)
            if m and t:
                out[(t.group(1), int(m.group(2)))] = (int(t.group(2)), int(t.group(3)),
                                                      int(t.group(4)))
    return out


def _row(impl: str, hd: int, s: int, kind: str, us: float) -> dict[str, str]:
    return {"id": f"attn49-{impl}-hd{hd}-s{s}-{kind}", "source": "attn49", "gpu": "h200-sxm-141gb",
            "kind": f"attention_{kind}", "implementation": "sdpa" if impl == "flash2" else impl,
            "dtype": "bf16",
            "batch": str(TOKENS // s), "seq_len": str(s), "heads": str(HIDDEN // hd),
            "kv_heads": str(HIDDEN // hd), "head_dim": str(hd), "causal": "1",
            "measured_value": f"{us:.3f}", "measured_unit": "us", "note": ""}


def priced_us(rows: list[dict[str, str]]) -> list[float]:
    """The roofline's time of each row (``fit_kernels.predict``: the validator's clocks)."""
    import fit_kernels
    from kernel_rows import load
    cols = ["id", "source", "gpu", "kind", "implementation", "dtype", "m", "n", "k", "groups",
            "batch", "seq_len", "heads", "kv_heads", "head_dim", "causal", "tokens", "hidden",
            "ffn", "experts", "top_k", "bytes", "measured_value", "measured_unit", "note"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.csv"
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, cols, restval="")
            w.writeheader()
            w.writerows(rows)
        return [t * 1e6 for t in fit_kernels.predict(load([path]))]


def run1_us() -> dict[tuple[str, int, int, str], float]:
    """Run 1's events per call (us) by (impl, head dim, seq, fwd|bwd), causal rows."""
    out = {}
    with open(RUN1, newline="") as fh:
        for r in csv.DictReader(fh):
            if not r["kind"].startswith("attention") or r["causal"].strip() != "1":
                continue
            b, s, h, d = (int(r[c]) for c in ("batch", "seq_len", "heads", "head_dim"))
            flops = 4.0 * b * s * s * h * d * 0.5 * (2.5 if r["kind"].endswith("bwd") else 1.0)
            impl = "flash2" if r["implementation"] == "sdpa" else r["implementation"]  # CASE's name
            out[(impl, d, s, r["kind"].split("_")[1])] = \
                flops / (float(r["measured_value"]) * 1e12) * 1e6
    return out


def table() -> list[dict]:
    cases = json.loads(RUN2.read_text())["sections"]["attn_kernels"]["cases"]
    keys, rows = [], []
    for case, kernels in sorted(cases.items()):
        m = CASE.match(case)
        if not m:
            continue
        impl, hd, s = m.group(1), int(m.group(2)), int(m.group(3))
        p = kernel_parts(kernels)
        for kind, us in (("fwd", p["fwd"]), ("bwd", p["bwd"] + p["helpers"])):
            keys.append((impl, hd, s, kind, p))
            rows.append(_row(impl, hd, s, kind, us))
    priced = priced_us(rows)
    from trainsim.compute import attention
    saved = attention.FA2_BWD_TAIL
    attention.FA2_BWD_TAIL = True  # FA2's causal backward tail in the roofline (off as shipped)
    try:
        tailed = priced_us(rows)
    finally:
        attention.FA2_BWD_TAIL = saved
    events = run1_us()
    out = []
    for (impl, hd, s, kind, p), row, t, tt in zip(keys, rows, priced, tailed):
        kern = float(row["measured_value"])
        copies = p["copies"] if kind == "bwd" else 0.0
        out.append({"impl": impl, "hd": hd, "s": s, "kind": kind, "priced_us": t,
                    "tailed_us": tt,
                    "kernels_us": kern, "copies_us": copies, "helpers_us":
                    p["helpers"] if kind == "bwd" else 0.0,
                    "events_us": events.get((impl, hd, s, kind))})
    return out


def refit_with_copies() -> dict[str, dict]:
    """The attention constants refitted (``fit_kernels.fit_attention``, the fitted rows of the
    bundled files) as they are and with the two copies priced on the measured file's SDPA-FA2
    backward rows (one HBM op of 2 launches reading and writing dO and O: a lower bound, the
    transposing copies ran at about a third of HBM speed); each with those rows' mean signed
    error of the time. The module constants are put back afterwards."""
    import fit_kernels as fk
    import numpy as np
    from kernel_rows import FILES, is_held, load, split

    from trainsim.compute import attention
    from trainsim.validate import BUNDLED_DIR
    from trainsim.workload.ops import Elementwise

    start = np.array(fk.attention_params())  # the shipped constants: both fits start there
    out = {}
    try:
        for mode in ("as measured", "copies priced"):
            fk.set_attention(start)
            rows = load([BUNDLED_DIR / f for f in FILES])
            held = split(rows)
            train = fk.attention_rows([r for r in rows if not is_held(r, held)])
            harness = [r for r in train if r.kind == "attention_bwd" and r.full_source.startswith(
                "measured on") and getattr(r.ops[0], "impl", "") in ("flash2", "sdpa")]
            if mode == "copies priced":
                for r in harness:
                    op = r.ops[0]
                    q_bytes = op.batch * op.q_len * op.heads * op.head_dim * 2
                    r.ops = [*r.ops, Elementwise("sdpa_contiguous_copies", bytes=2.0 * 2 * q_bytes,
                                                 kernels=2)]
            fk.fit_attention(train)
            signed = fk.predict(harness) / np.array([r.measured_s for r in harness]) - 1.0
            out[mode] = {"rows": len(harness), "signed": float(np.mean(signed)),
                         "ATTENTION_OF_GEMM": dict(attention.ATTENTION_OF_GEMM),
                         "ATTN_ROW_OVERHEAD_KEYS": dict(attention.ATTN_ROW_OVERHEAD_KEYS),
                         "SOFTMAX_EXP_EXPOSED": attention.SOFTMAX_EXP_EXPOSED}
    finally:
        fk.set_attention(start)
    return out


def main() -> int:
    if "--refit-copies" in sys.argv[1:]:  # ~1 min on 2 cores
        for mode, r in refit_with_copies().items():
            frac = {k: tuple(round(x, 3) for x in v) for k, v in r["ATTENTION_OF_GEMM"].items()}
            keys = {k: tuple(round(x) for x in v) for k, v in r["ATTN_ROW_OVERHEAD_KEYS"].items()}
            print(f"{mode}: {r['rows']} SDPA-FA2 backward rows, signed {r['signed']:+.1%}; "
                  f"ATTENTION_OF_GEMM {frac}; ATTN_ROW_OVERHEAD_KEYS {keys}; "
                  f"SOFTMAX_EXP_EXPOSED {r['SOFTMAX_EXP_EXPOSED']:.3f}")
        return 0
    rows = table()
    buf = io.StringIO()
    buf.write("| impl | hd | s | dir | priced us | kernels us (helpers) | priced/kernels - 1 | "
              "kernels+copies us | priced/(k+c) - 1 | run-1 events us | priced/events - 1 | "
              "with FA2's tail: priced/kernels - 1 |\n")
    buf.write("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        kc = r["kernels_us"] + r["copies_us"]
        ev = r["events_us"]
        buf.write(f"| {r['impl']} | {r['hd']} | {r['s']} | {r['kind']} | {r['priced_us']:.0f} | "
                  f"{r['kernels_us']:.0f} ({r['helpers_us']:.0f}) | "
                  f"{r['priced_us'] / r['kernels_us'] - 1:+.1%} | {kc:.0f} | "
                  f"{r['priced_us'] / kc - 1:+.1%} | "
                  + (f"{ev:.0f} | {r['priced_us'] / ev - 1:+.1%} | " if ev else "- | - | ")
                  + f"{r['tailed_us'] / r['kernels_us'] - 1:+.1%} |\n")
    print(buf.getvalue())
    cases = json.loads(RUN2.read_text())["sections"]["attn_kernels"]["cases"]
    print("cuDNN kernel tiles by name (direction, head dim) -> (M, N, K):")
    for k, v in sorted(cudnn_tiles(cases).items()):
        print(f"  {k[0]} hd{k[1]}: {v[0]} x {v[1]} x {v[2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
