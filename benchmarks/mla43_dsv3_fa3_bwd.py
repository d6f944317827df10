"""DeepSeek's profiled FA3 backward at MLA's widths (q/k 192, v 128) against bwd43's tile pacing
(43rd session, mla43; diagnostic, no src change).

    PYTHONPATH=src python benchmarks/mla43_dsv3_fa3_bwd.py [--json]

bwd43 (``compute.fa3_bwd_traits``) paces FA3's Hopper backward by the tile that
Dao-AILab/flash-attention@0251105a instantiates per head dim; at 192 that is 64 x 96 with three
MMA warp groups (hopper/flash_bwd_launch_template.h L367), whose S and dP ``wgmma``s are
64 x 32: pace 1.20 (1.19 with dP and dV weighted at v 128). Two sources say what MLA's backward
actually runs:

* **Today's FA3 has no (192, 128) backward.** @0251105a hopper/flash_api.cpp L1368-L1369
  (``mha_bwd``): ``head_size_rounded = round_up_headdim(max(head_size, head_size_v))``,
  ``head_size_v_rounded = head_size_rounded``; L1201-L1241 dispatch on ``d_rounded`` alone,
  and every tile of hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp L82-L125 is built on the one
  ``kHeadDim``: V, dO and dV are the 192-wide tile, the 64 columns past v zero-filled by TMA
  (``shape_V`` / ``shape_dO`` carry ``params.dv``, flash_bwd_launch_template.h L115-L118).
  So with Dao-AILab's FA3 MLA's backward is the hd192 kernel at pace 1.20 (dP, dV at 192).
* **DeepSeek's trace runs another kernel.** deepseek-ai/profile-data@4496024 train.json names
  its backward ``flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, (1,1,1), (64,128,192),
  (64,128,128), bf16, float, Sm90, true, true, false, false, false, 1, 2, 1>, ...>``, 384
  threads a CTA: FA3's first Hopper backward (@bafe2530, 2024-08-01,
  hopper/mainloop_bwd_sm90_tma_gmma_ws.hpp L26-L29: ``Stages, ClusterShape, TileShape_MNK,
  Element, ElementAccum, ArchTag, Is_causal, Varlen, Deterministic, dKV_swapAB, dQ_swapAB,
  AtomLayoutMSdP, AtomLayoutNdKV, AtomLayoutMdQ``; L40 ``SdP_swapAB = true``; two MMA warp
  groups, L49 ``NumdQWarpGroups = 2``) with a second tile shape for V added: 64 query rows x
  128 keys at q/k 192 and v 128, the tile @bafe2530's launch template gives head dims 96 and 128
  (flash_bwd_launch_template.h L184, L196). Its postprocess kernel's ``SM90_64x96x16`` dQ atom
  (two warp groups over 192) is in the same trace.

Under bwd43's own model (``fa3_bwd_gemm_widths`` / ``wgmma_smem_over_mma``) that tile's five
matmuls all keep up with the tensor cores: S and dP transposed (N = 64 query rows), dV and dK
from registers (N = 128 / 192), dQ 64 x 96 from shared memory (1/96 + 1/64 bytes a FLOP, under
the 1/32 shared memory feeds): pace 1.00. The script prints both tiles' matmuls and prices the
DeepSeek-V3 example's middle DualPipe pair and step with each (the trace's tile priced by
substituting it for the hd192 causal entry of ``FA3_BWD_TRAITS`` in a child process).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepseek_v3_kernels as dk

import trainsim
from trainsim.compute import fa3_bwd_traits as ft

MLA_QK, MLA_V = 192, 128
"""MLA's query/key and value head widths (DeepSeek-V3: 128 + 64 rope, 128)."""
TRACE_THREADS = 384
"""The trace's backward CTA: 384 threads, one producer and two MMA warp groups."""
TRACE_TILE = ft.Fa3BwdTraits(block_m=64, block_n=128, warpgroups=TRACE_THREADS // 128 - 1,
                             sdp_swap=True, dkv_swap=False, dq_swap=False,
                             atom_sdp=1, atom_dkv=2, atom_dq=1)
"""DeepSeek's traced backward (module docstring): tile (64, 128), two MMA warp groups,
S/dP transposed (@bafe2530 L40), dKV and dQ untransposed, atoms 1 / 2 / 1, as its kernel name."""
TRACE_KEY = "CollectiveMainloopBwd<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
"""Where the trace's backward template arguments start."""


def trace_template(path: str | None = None) -> dict | None:
    """The traced backward's template arguments, parsed from train.json (the mirror, or
    ``path``); None where the trace is not at hand."""
    try:
        trace = dk.load_trace(path)
    except (OSError, subprocess.CalledProcessError):
        return None
    for e in trace["traceEvents"]:
        n = e.get("name", "")
        if e.get("cat") == "kernel" and "FlashAttnBwd<flash::CollectiveMainloopBwd" in n:
            a = n.split(TRACE_KEY, 1)[1].split(">, flash::CollectiveEpilogueBwd")[0]
            shapes, rest = a.rsplit(" >, ", 1)
            tiles = [[int(x) for x in s.replace("cute::tuple<", "").replace("cute::C<", "")
                      .replace(">", "").split(",")] for s in shapes.split(" >, ")]
            args = [x.strip() for x in rest.split(",")]
            return {"tile_mnk": tiles[0], "tile_mnk_v": tiles[1], "args_after_arch": args[3:],
                    "threads": e["args"]["block"][0]}
    return None


def tiles() -> list[dict]:
    out = []
    for name, t in (("FA3 @0251105a hd192 (bwd43)", ft.fa3_bwd_traits(MLA_QK, True)),
                    ("DeepSeek trace (64 x 128, 2 WG)", TRACE_TILE)):
        gemms = ft.fa3_bwd_gemm_widths(t, MLA_QK, MLA_V)
        total = sum(w for _, _, w in gemms)
        pace = sum(ft.wgmma_smem_over_mma(n, rs) * w for n, rs, w in gemms) / total
        out.append({"tile": name, "block": [t.block_m, t.block_n], "warpgroups": t.warpgroups,
                    "gemms": [{"mm": mm, "n": n, "a_in_regs": rs,
                               "pace": round(ft.wgmma_smem_over_mma(n, rs), 3)}
                              for mm, (n, rs, _) in zip(("S", "dP", "dV", "dK", "dQ"), gemms)],
                    "pace_mla": round(pace, 4)})
    return out


def priced(mode: str) -> dict:
    """The example's middle pair and step with bwd43's hd192 tile (``on``), the trace's tile
    (``trace``) or the pacing off (``off``)."""
    if mode == "trace":
        ft.FA3_BWD_TRAITS[(MLA_QK, True)] = TRACE_TILE
    elif mode == "off":
        ft.FA3_BWD_SMEM_BOUND = False
    cfg = trainsim.load_run_config(dk.dsv3.CONFIG, dk.DUALPIPE)
    p, s = dk.pair(cfg), dk.step(cfg)
    return {"attention_bwd_s": p["middle_by_class_s"]["attention_bwd"],
            "middle_pair_s": p["middle_pair_s"], "iteration_time_s": s["iteration_time_s"],
            "gpu_hours": s["gpu_hours"], "vs_reported": s["vs_reported"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mode", choices=("on", "trace", "off"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mode:
        print(json.dumps(priced(args.mode)))
        return
    kept = json.loads(dk.KEPT.read_text())
    measured = kept["by_stream_s"]["7"]["attention_bwd"]
    runs = {m: json.loads(subprocess.run([sys.executable, __file__, "--mode", m], check=True,
                                         capture_output=True, text=True).stdout)
            for m in ("on", "trace", "off")}
    res = {"trace_template": trace_template(), "tiles": tiles(),
           "measured_attention_bwd_s": measured, "priced": runs}
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"trace backward template: {res['trace_template']}")
    for t in res["tiles"]:
        mm = ", ".join(f"{g['mm']} N{g['n']}{' rs' if g['a_in_regs'] else ''} {g['pace']}"
                       for g in t["gemms"])
        print(f"- {t['tile']}: {t['block']} x{t['warpgroups']} WG: {mm}; pace {t['pace_mla']}")
    print("| DeepSeek-V3 example | attention bwd ms (measured "
          f"{measured * 1e3:.1f}) | middle pair ms (129.0) | step s (19.926) | GPU-hours |")
    print("|---|---|---|---|---|")
    for m, r in runs.items():
        print(f"| {m} | {r['attention_bwd_s'] * 1e3:.1f} ({r['attention_bwd_s'] / measured - 1:+.1%})"
              f" | {r['middle_pair_s'] * 1e3:.1f} | {r['iteration_time_s']:.3f} | "
              f"{r['gpu_hours'] / 1e6:.3f}M ({r['vs_reported']:+.1%}) |")


if __name__ == "__main__":
    main()
