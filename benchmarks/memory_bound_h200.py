"""Why the memory-bound model transfers badly from H100 (HBM3, 3.35 TB/s) to H200 (HBM3e,
4.8 TB/s, the same 132 SMs at the same 1980 MHz and the same 50 MB L2): a diagnostic.

    PYTHONPATH=src python benchmarks/memory_bound_h200.py             # tables, plain text
    PYTHONPATH=src python benchmarks/memory_bound_h200.py --markdown  # the same for RESULTS.md

Data: ``shared/validation/kernels_h100_measured.csv`` and ``benchmarks/kernels_h200_measured.csv``
(the same script and shapes, torch 2.11 / CUDA 13, 2026-11-23 and 2026-11-27), the memory-bound
rows of ``kernels_published.csv`` (vidur's A100 and H100 vLLM kernels, Liger-Kernel's A100 and
H100 benchmarks) and ``benchmarks/kernels_memory_published.csv`` (B200 nvbench, quack H100).

Three readings:

1. ``pairs``: each memory-bound kernel's achieved bandwidth (its minimal bytes over its time) on
   both GPUs and the H100 / H200 time ratio, against the HBM ratio 4.8 / 3.352 = 1.43. A copy
   or residual add gains 1.28-1.39x (0.90-0.93 of the datasheet on H100, 0.83-0.88 on H200:
   the device tool's own device-to-device copies read 3.0 and 4.3 TB/s, 0.895 and 0.896), so
   the achievable fraction of a streaming kernel barely moves with the HBM generation and no
   fixed per-kernel cost shows (the copy's intercept over 67-537 MB is ~1 us on both). The
   kernels that miss are the ones whose rate the SMs set: the chunked eager SwiGLU (PyTorch's
   non-vectorized path, one 16-bit load per thread) gains 1.05x, compiled and eager RMSNorm
   1.03-1.16x, GELU 1.15-1.20x, cross-entropy and AdamW 1.23-1.40x.
2. ``scalar``: the one-element-per-thread path's best rate per GPU (golden section on that
   GPU's rows with a non-vectorized share, ``workload.elementwise.strided_share``): as a
   fraction of HBM it is 0.48 (A100), 0.54 (H100), 0.40 (H200) -- not a constant; per SM and
   clock it is 6.5, 6.9, 7.3 bytes. Little's law: a few bytes in flight per thread over a
   memory latency counted in SM clocks give a rate set by the SMs x clock, which the H200's
   faster HBM does not raise.
3. ``whatif``: the non-vectorized path priced at min(``HBM_EFFICIENCY`` x HBM, b x SMs x max
   SM clock) with one global b (bytes per SM per clock) fitted on the same rows
   ``fit_kernels.py`` fits ``SCALAR_HBM_EFFICIENCY`` on (A100 and H100 only; every H200 row held
   out), against the shipped fraction of HBM: the memory-bound error per GPU and file.

The max SM clocks are hardware data (``MAX_SM_CLOCK_HZ``); ``GPUSpec`` has no such field yet, so
the what-if stays here. ``benchmarks/candidates/scalar_loads_sm_clock.patch`` is the change itself
(``GPUSpec.max_sm_clock_mhz`` with the catalog's sourced clocks, ``roofline.scalar_load_bw`` and
``SCALAR_BYTES_PER_SM_CLOCK`` fitted by ``fit_kernels.py`` in ``SCALAR_HBM_EFFICIENCY``'s place,
which stays for GPUs that state no max clock); RESULTS.md (36th session, h200mem) has its figures.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_kernels as fk
from kernel_rows import Row, is_held, load, split

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute import roofline
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.kernels import L2_RESIDENT
from trainsim.workload.elementwise import strided_share
from trainsim.workload.ops import Elementwise

HERE = Path(__file__).resolve().parent
H100_FILE = BUNDLED_DIR / "kernels_h100_measured.csv"
H200_FILE = HERE / "kernels_h200_measured.csv"
MEMORY_PUBLISHED = HERE / "kernels_memory_published.csv"

MAX_SM_CLOCK_HZ = {
    # nvidia-smi clocks.max.sm of the H200 measured here (benchmarks/h200_2026-11-27/nvidia_smi.csv)
    "h200-sxm-141gb": 1980e6,
    # H100 SXM5: 1980 MHz max (AWS EC2 User Guide, "Optimize GPU settings", p5 application
    # clocks; the H100 peak of 989 TFLOP/s is quoted at 1830 MHz)
    "h100-sxm-80gb": 1980e6,
    # A100 SXM4: 1410 MHz boost (NVIDIA A100 Tensor Core GPU Architecture whitepaper, table 1)
    "a100-sxm-80gb": 1410e6,
    # B200: 1965 MHz max (AWS EC2 User Guide, p6-b200 application clocks)
    "b200-sxm-180gb": 1965e6,
}
"""Max SM clock of the GPUs whose memory-bound rows the what-if prices (hardware data, each with
its source; the same figures as the 31st session's ``attention_ampere_sm_clock.patch``)."""


def _file_rows(path: Path) -> Iterator[dict[str, str]]:
    with open(path, newline="") as fh:
        yield from csv.DictReader(fh)


def pairs() -> list[tuple[str, float, float, float, float, float]]:
    """(kernel, bytes, H100 TB/s, H200 TB/s, H100 fraction, H200 fraction) of each memory-bound
    shape both files hold, L2-resident rows left out; the time ratio is the TB/s ratio."""
    h100 = {r["id"].split("-", 1)[1]: r for r in _file_rows(H100_FILE)
            if r["kind"] == "memory_bound"}
    g100, g200 = catalog_gpu("h100-sxm-80gb"), catalog_gpu("h200-sxm-141gb")
    out = []
    for r in _file_rows(H200_FILE):
        key = r["id"].split("-", 1)[1]
        if r["kind"] != "memory_bound" or key not in h100:
            continue
        if L2_RESIDENT.search(r["note"] or "") or L2_RESIDENT.search(h100[key]["note"] or ""):
            continue
        nbytes = float(r["bytes"])
        t100, t200 = float(h100[key]["measured_value"]) * 1e-3, float(r["measured_value"]) * 1e-3
        out.append((key.removeprefix("mem-"), nbytes, nbytes / t100 / 1e12, nbytes / t200 / 1e12,
                    nbytes / t100 / g100.hbm_bw_Bps, nbytes / t200 / g200.hbm_bw_Bps))
    return out


def all_rows() -> tuple[list[Row], dict[str, set[str]]]:
    """Every kernel row of the fit's files, the H200 file and the memory file, with the fit's
    split (``kernel_rows.split`` over the fit's own files: the H200 file and the memory file
    are held out whole, being no fit source)."""
    fitted = load([BUNDLED_DIR / f for f in fk.FILES])
    held = split(fitted)
    extra = load([H200_FILE, MEMORY_PUBLISHED])
    for r in extra:
        held.setdefault(r.kind, set()).add(r.source)
    return fitted + extra, held


def is_scalar(r: Row) -> bool:
    return r.kind == "memory_bound" and any(
        isinstance(op, Elementwise) and strided_share(op) > 0 for op in r.ops)


def signed(rows: list[Row]) -> tuple[float, float]:
    """(MAPE, mean signed error) of the rows' times, in %."""
    if not rows:
        return float("nan"), float("nan")
    err = fk.predict(rows) / np.array([r.measured_s for r in rows]) - 1.0
    return float(np.mean(np.abs(err)) * 100), float(np.mean(err) * 100)


@contextmanager
def hbm_fraction_form() -> Iterator[None]:
    """The non-vectorized path as a fraction of HBM (``SCALAR_HBM_EFFICIENCY`` x HBM on every
    GPU, the form before ``roofline.scalar_load_bw``) while the block runs; the shipped form
    restored after it. The readings and what-ifs below are expressed through that fraction."""
    shipped = roofline.scalar_load_bw
    roofline.scalar_load_bw = lambda gpu: gpu.hbm_bw_Bps * roofline.SCALAR_HBM_EFFICIENCY
    try:
        yield
    finally:
        roofline.scalar_load_bw = shipped


def scalar_by_gpu(rows: list[Row]) -> list[tuple[str, int, float, float, float, float]]:
    """(GPU, rows, best fraction of HBM, TB/s, GB/s per SM, bytes per SM clock) of the
    non-vectorized path, fitted on each GPU's own rows (reading only; nothing ships)."""
    shipped = roofline.SCALAR_HBM_EFFICIENCY
    out = []
    with hbm_fraction_form():
        try:
            for name in sorted({r.gpu for r in rows if is_scalar(r)}):
                rs = [r for r in rows if is_scalar(r) and r.gpu == name]

                def loss(x: float, rs: list[Row] = rs) -> float:
                    roofline.SCALAR_HBM_EFFICIENCY = x
                    return float(np.mean(fk.ape(rs)))

                best = fk.golden(loss, 0.1, 1.0, tol=0.002)
                g = catalog_gpu(name)
                rate = best * g.hbm_bw_Bps
                out.append((name, len(rs), best, rate / 1e12, rate / g.num_sms / 1e9,
                            rate / g.num_sms / MAX_SM_CLOCK_HZ[name]))
        finally:
            roofline.SCALAR_HBM_EFFICIENCY = shipped
    return out


def predict_sm_clock(rows: list[Row], per_sm_clock: float) -> np.ndarray:
    """Times with the non-vectorized path at min(``HBM_EFFICIENCY`` x HBM, ``per_sm_clock`` x
    SMs x max SM clock), GPU by GPU (expressed through ``SCALAR_HBM_EFFICIENCY``, restored)."""
    shipped = roofline.SCALAR_HBM_EFFICIENCY
    out = np.empty(len(rows))
    by_gpu: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_gpu[r.gpu].append(i)
    with hbm_fraction_form():
        try:
            for name, idx in by_gpu.items():
                g = catalog_gpu(name)
                clock = MAX_SM_CLOCK_HZ.get(name)
                if clock is not None:
                    roofline.SCALAR_HBM_EFFICIENCY = min(
                        roofline.HBM_EFFICIENCY, per_sm_clock * g.num_sms * clock / g.hbm_bw_Bps)
                else:
                    roofline.SCALAR_HBM_EFFICIENCY = shipped
                out[idx] = fk.predict([rows[i] for i in idx])
        finally:
            roofline.SCALAR_HBM_EFFICIENCY = shipped
    return out


def fit_sm_clock(rows: list[Row], held: dict[str, set[str]]) -> float:
    """b (bytes per SM per clock) on the non-vectorized rows ``fit_kernels.py`` fits
    ``SCALAR_HBM_EFFICIENCY`` on (its split's fitted rows), by golden section."""
    train = [r for r in rows if is_scalar(r) and not is_held(r, held)]
    measured = np.array([r.measured_s for r in train])

    def loss(b: float) -> float:
        return float(np.mean(np.abs(predict_sm_clock(train, b) / measured - 1.0)))

    return round(fk.golden(loss, 1.0, 20.0, tol=0.01), 2)


def whatif(rows: list[Row], held: dict[str, set[str]], per_sm_clock: float
           ) -> list[tuple[str, int, float, float, float, float]]:
    """(cell, rows, shipped MAPE, shipped signed, what-if MAPE, what-if signed) of the
    memory-bound rows by GPU and part (fit / held out), scalar rows and all."""
    gpus = {r.gpu for r in rows if is_scalar(r)}  # the GPUs the what-if can move
    mem = [r for r in rows if r.kind == "memory_bound" and r.gpu in gpus]
    cells: dict[str, list[Row]] = defaultdict(list)
    for r in mem:
        part = "held" if is_held(r, held) else "fit"
        cells[f"{r.gpu} {part} all"].append(r)
        if is_scalar(r):
            cells[f"{r.gpu} {part} scalar"].append(r)
    out = []
    for cell in sorted(cells):
        rs = cells[cell]
        measured = np.array([r.measured_s for r in rs])
        new = predict_sm_clock(rs, per_sm_clock) / measured - 1.0
        with hbm_fraction_form():  # "shipped": the 0.54-of-HBM form before the 36th session
            mape, sgn = signed(rs)
        out.append((cell, len(rs), mape, sgn, float(np.mean(np.abs(new)) * 100),
                    float(np.mean(new) * 100)))
    return out


def _table(head: list[str], body: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    width = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    return "\n".join("  ".join(x.ljust(w) for x, w in zip(row, width, strict=True))
                     for row in [head, *body])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    md = args.markdown
    hbm_ratio = catalog_gpu("h200-sxm-141gb").hbm_bw_Bps / catalog_gpu("h100-sxm-80gb").hbm_bw_Bps
    print(f"1. pairs (H200/H100 HBM ratio {hbm_ratio:.3f})")
    body = [[k, f"{b / 1e6:.0f}", f"{a:.2f}", f"{c:.2f}", f"{fa:.3f}", f"{fc:.3f}", f"{c / a:.3f}"]
            for k, b, a, c, fa, fc in pairs()]
    print(_table(["kernel", "MB", "H100 TB/s", "H200 TB/s", "H100 frac", "H200 frac",
                  "H100/H200 time"], body, md))
    rows, held = all_rows()
    print("\n2. the non-vectorized path, best rate per GPU")
    body = [[g, str(n), f"{f:.3f}", f"{tb:.3f}", f"{per:.2f}", f"{clk:.2f}"]
            for g, n, f, tb, per, clk in scalar_by_gpu(rows)]
    print(_table(["gpu", "rows", "fraction of HBM", "TB/s", "GB/s per SM", "B per SM clock"],
                 body, md))
    b = fit_sm_clock(rows, held)
    print(f"\n3. what-if: non-vectorized path at min(HBM_EFFICIENCY x HBM, {b} B x SMs x max "
          f"clock) (b fitted on the fit's A100/H100 rows; shipped SCALAR_HBM_EFFICIENCY "
          f"{roofline.SCALAR_HBM_EFFICIENCY})")
    body = [[c, str(n), f"{m0:.2f}", f"{s0:+.2f}", f"{m1:.2f}", f"{s1:+.2f}"]
            for c, n, m0, s0, m1, s1 in whatif(rows, held, b)]
    print(_table(["gpu part rows", "n", "shipped MAPE", "signed", "what-if MAPE", "signed"],
                 body, md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
