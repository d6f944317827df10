"""Long-sequence training rows: how much of each step is attention, how much faster attention
would have to run for the row to match, and what the attention kernels' own sources say at the
same sequence lengths (a diagnostic: nothing here feeds trainsim; issue 17, 59th session,
longseq59).

    PYTHONPATH=src:benchmarks python benchmarks/longseq59_parts.py [FILE]      # ~20 s idle
    PYTHONPATH=src:benchmarks python benchmarks/longseq59_parts.py --kernels    # ~5 s

Rows (default ``training_nemo_longseq.csv``), each priced in a fresh process per case
(``part_cases``):

* ``base``: as trainsim prices it;
* ``attn``: every attention call doubled, so the step time it adds is the attention's time on
  the critical path (``attn_s``; CP ring steps, the diagonal call and the backward alike);
* ``bwd``: every attention backward call doubled (``bwd_s``, part of ``attn_s``);
* ``cp`` / ``tp``: every communication of the context-parallel (tensor-parallel) group doubled:
  what the ring's hops (TP/SP collectives) hold, hidden ones only the SMs they take
  (``Pricer.sm_share``);
* ``burst``: every attention call at the GPU's burst clock (its time x ``sustained_of_burst`` x
  ``power_scale``: the compute of a long call, whose launch and memory time are far below
  0.1 % of it), everything else as priced.

Beside them, priced in-process: the step's exposed communication (``breakdown``), and one later
ring step's call on the pacing rank (all local queries against half the received keys,
``workload.context_parallel._te_step``; the whole call without CP) with its rate in TFLOP/s at
the training and the burst clock.

``need`` is the factor by which the attention's critical time would have to shrink for the row
to match with every other part held (``needed_factor``): a constant ``need`` along a file while
the error grows means the error is the attention share times one attention rate, not a part
that grows with the sequence or the CP size.

``--kernels`` prints, per GPU, kernel and direction, the mean priced-over-measured time of the
attention kernel rows at ``MIN_SEQ`` tokens or more in the kernel files (``KERNEL_FILES``) at three
clocks: the burst clock, the benchmark loop the validator assumes (``roofline.loop_clock_factor``)
and the training clock (``sustained_of_burst``), each through the same compute chain as training.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from part_cases import collect, priced, priced_rows, print_case, run

from trainsim import TrainsimError, catalog, pricing
from trainsim.compute import roofline
from trainsim.validate import kernels as vk
from trainsim.validate.training import predict_training_row
from trainsim.workload.ops import Attention

HERE = Path(__file__).parent
SHARED = HERE.parent.parent / "shared" / "validation"
CASES = ("base", "attn", "bwd", "cp", "tp", "burst")
MIN_SEQ = 16384
KERNEL_FILES = (SHARED / "kernels_published.csv", SHARED / "kernels_h100_measured.csv",
                HERE / "kernels_h200_measured.csv", HERE / "kernels_blackwell.csv")
CLOCKS = ("burst", "loop", "training")


def needed_factor(measured: float, predicted: float, attn_s: float) -> float | None:
    """How many times faster the attention's ``attn_s`` seconds on the critical path would have
    to run for ``predicted`` to equal ``measured``, every other part held; None where even
    attention at no cost would leave the row slow (or there is no attention)."""
    left = attn_s - (predicted - measured)
    if attn_s <= 0 or left <= 0:
        return None
    return attn_s / left


def _scale(label: str) -> None:
    time = roofline.RooflineModel._time

    def scaled(self: roofline.RooflineModel, op) -> float:
        t = time(self, op)
        if not isinstance(op, Attention):
            return t
        if label == "attn" or label == "bwd" and op.backward:
            return 2 * t
        if label == "burst":
            return t * self.gpu.sustained_of_burst * self.gpu.power_scale
        return t

    roofline.RooflineModel._time = scaled
    if label in ("cp", "tp"):
        comm = pricing.Pricer._comm_time

        def doubled(self: pricing.Pricer, op) -> float:
            t = comm(self, op)
            return 2 * t if op.group == label else t

        pricing.Pricer._comm_time = doubled


def case(label: str, path: Path) -> None:
    _scale(label)
    print_case(priced, path)


def _fmt(x: float | None) -> str:
    return f"{x:6.3f}" if x is not None else "     -"


def ring_step(row: dict[str, str], impl: str, backward: bool) -> Attention:
    """One later ring step's call on the pacing rank (the whole causal call without CP), one
    micro-batch, the heads of one tensor-parallel rank."""
    s, tp, cp = int(row["seq_length"]), int(row["tp"] or 1), int(row["cp"] or 1)
    preset = catalog.model(row["model"])  # where the row gives no shape columns
    heads = int(row.get("num_attention_heads") or preset.num_attention_heads)
    kv = int(row.get("num_kv_heads") or (preset.num_kv_heads if not row.get(
        "num_attention_heads") else heads))
    hd = int(row.get("head_dim") or 0) or (int(row["hidden_size"]) // heads
                                           if row.get("hidden_size") else preset.kv_channels)
    b = int(row["micro_batch_size"] or 1)
    q = s // cp
    return Attention("attn_core.te_ring1", batch=b, heads=heads // tp, kv_heads=max(1, kv // tp),
                     q_len=q, kv_len=q // 2 if cp > 1 else q, head_dim=hd, causal=cp == 1,
                     backward=backward, impl=impl)  # type: ignore[arg-type]


def step_rates(row: dict[str, str], impl: str) -> tuple[float, float, float, float]:
    """TFLOP/s of ``ring_step``'s forward and backward at the training clock, then at the burst
    clock (FLOPs as the kernel files count them: backward 2.5x forward)."""
    out = []
    for clock in ("training", "burst"):
        model = vk._model(row["gpu"].strip(), "auto", clock == "training", clock == "burst")
        for backward in (False, True):
            op = ring_step(row, impl, backward)
            flops = 4.0 * op.batch * op.heads * op.pairs * op.head_dim * (2.5 if backward else 1)
            out.append(flops / model.time(op) / 1e12)
    return out[0], out[1], out[2], out[3]


def main(path: Path) -> None:
    got = collect(__file__, CASES, path)
    print(f"{'row':44s} {'gpu':5s} tp cp {'seq':>7s}   err%  attn_s share bwd_s   cp_s   tp_s "
          f"exp_s   need burst_err%  need@burst  step q x kv, heads: fwd/bwd TFLOP/s train, burst")
    for r, m, p, (attn, bwd, cp, tp, burst) in priced_rows(got, CASES, path):
        res = predict_training_row(r)
        impl = res.extra["settings"]["attention"]
        exposed = res.extra["breakdown"]["exposed_comm_s"]
        op = ring_step(r, impl, False)
        rates = step_rates(r, impl)
        pb = p + burst
        print(f"{r['id'][:44]:44s} {r['gpu'][:5]} {r['tp']:>2s} {r['cp'] or '1':>2s} "
              f"{int(r['seq_length']):7d} {100 * (p / m - 1):+6.1f} {attn:7.2f} {attn / p:5.2f} "
              f"{bwd:5.2f} {cp:6.3f} {tp:6.3f} {exposed:5.2f} "
              f"{_fmt(needed_factor(m, p, attn))} {100 * (pb / m - 1):+10.1f} "
              f"{_fmt(needed_factor(m, pb, attn + burst))}      "
              f"{impl} {op.q_len // 1024}K x {op.kv_len // 1024}K{'c' if op.causal else ''}, "
              f"{op.heads}/{op.kv_heads}: {rates[0]:.0f}/{rates[1]:.0f}, {rates[2]:.0f}/{rates[3]:.0f}")


# --- the kernels' own sources at long sequences ---

def measured_s(row: dict[str, str], flops: float | None) -> float:
    """A kernel row's measured seconds (a rate by the row's FLOP convention, or a time)."""
    unit, value = vk.measured_unit(row), float(row["measured_value"])
    if unit == vk.RATE_UNIT:
        assert flops is not None
        return flops / (value * 1e12)
    return value * vk.TIME_UNITS[unit]


def priced_s(row: dict[str, str], clock: str) -> tuple[float, float]:
    """(priced seconds at ``clock``, measured seconds) of one attention kernel row."""
    ops, flops = vk.kernel_ops(row)
    model = vk._model(row["gpu"].strip(), "auto", clock == "training", clock == "burst")
    return sum(model.time(op) for op in ops), measured_s(row, flops)


def long_attention_rows(files=KERNEL_FILES) -> list[dict[str, str]]:
    """Attention forward and backward rows at ``MIN_SEQ`` tokens or more, with no dropout."""
    out = []
    for path in files:
        if not path.exists():
            continue
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                if row["kind"] in ("attention_fwd", "attention_bwd") and row["seq_len"] \
                        and int(row["seq_len"]) >= MIN_SEQ and not vk.attention_dropout(row):
                    out.append(row)
    return out


def _priced_clocks(row: dict[str, str]) -> tuple[str, dict[str, tuple[float, float]]] | None:
    """(the kernel the row is priced as, ``priced_s`` at each clock); None for a row the
    validator refuses (its error is the validator's to report, not a datum here)."""
    try:
        impl = vk._attention(row, row["kind"] == "attention_bwd").impl
        return impl, {c: priced_s(row, c) for c in CLOCKS}
    except (TrainsimError, ValueError, KeyError):
        return None


def kernel_ratios(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], dict[str, float]]:
    """Per (gpu, priced kernel, kind): row count and the mean priced-over-measured time at each
    clock (``CLOCKS``); rows the validator cannot price are left out."""
    groups: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(list))
    for row in rows:
        got = _priced_clocks(row)
        if got is None:
            continue
        impl, got = got
        g = groups[(row["gpu"].strip(), impl, row["kind"].removeprefix("attention_"))]
        for c, (p, m) in got.items():
            g[c].append(p / m)
    return {k: {"n": len(v["burst"]), **{c: statistics.fmean(v[c]) for c in CLOCKS}}
            for k, v in sorted(groups.items())}


def print_kernels() -> None:
    print(f"attention kernel rows at >= {MIN_SEQ} tokens: priced / measured time")
    print(f"{'gpu':16s} {'kernel':8s} {'kind':4s} {'n':>3s} " + " ".join(f"{c:>8s}" for c in CLOCKS))
    for (gpu, impl, kind), v in kernel_ratios(long_attention_rows()).items():
        print(f"{gpu:16s} {impl:8s} {kind:4s} {v['n']:3d} "
              + " ".join(f"{v[c]:8.3f}" for c in CLOCKS))


if __name__ == "__main__":
    if sys.argv[1:] == ["--kernels"]:
        print_kernels()
    else:
        run(case, main, HERE / "training_nemo_longseq.csv")
