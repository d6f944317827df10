"""The SimuMax B200 node's kernel sweep beyond its dense GEMMs (simumax54, 2026-11-28): 108 TE
grouped GEMMs and 20 MLA attention kernels (benchmarks/kernels_simumax_b200.csv, written by
benchmarks/simumax_b200_gemms.py from MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json
@ 4dcaae5), the kernels column ``v_head_dim`` they need, and the causal backward's critical path
of a warp-specialised kernel with few CTAs (``compute.causal_bwd_tail.warp_specialised_bwd_tail``)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from helpers import validated

from trainsim.catalog import gpu as catalog_gpu
from trainsim.compute.causal_bwd_tail import warp_specialised_bwd_tail
from trainsim.errors import ConfigError
from trainsim.validate.kernels import kernel_ops, predict_kernel_row
from trainsim.workload.ops import Attention

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "benchmarks" / "kernels_simumax_b200.csv"


def _rows() -> list[dict[str, str]]:
    with open(KERNELS, newline="") as fh:
        return list(csv.DictReader(fh))


def _attn_row(**cells: str) -> dict[str, str]:
    row = {"id": "t", "gpu": "b200-sxm-180gb", "kind": "attention_fwd", "implementation": "cudnn",
           "dtype": "bf16", "batch": "1", "seq_len": "4096", "heads": "16", "kv_heads": "16",
           "head_dim": "192", "v_head_dim": "128", "causal": "1", "measured_value": "0.1",
           "measured_unit": "ms"}
    row.update(cells)
    return row


def test_grouped_rows_are_the_stages_of_each_expert_gemm():
    """Each of the 108 grouped rows is one stage of TE's grouped GEMM in the kernels file's terms
    (m the rows of all groups), its rate 2 ng M N K over the time: forward m = ng M, n = N, k = K;
    input gradient m = ng M, n = K, k = N; weight gradient m = ng N, n = K, k = M."""
    rows = [r for r in _rows() if r["kind"] == "gemm_grouped"]
    assert len(rows) == 108 and {r["implementation"] for r in rows} == {"te"}
    stages = {"fwd": 0, "bwd-grad-act": 0, "bwd-grad-w": 0}
    for r in rows:
        g, M, N, K, stage = re.fullmatch(
            r"simumax-b200-ggemm-\d{3}-g(\d+)-m(\d+)-n(\d+)-k(\d+)-(fwd|bwd-grad-act|bwd-grad-w)"
            r"-(?:fp32|bf16)", r["id"]).groups()
        g, M, N, K = int(g), int(M), int(N), int(K)
        stages[stage] += 1
        want = {"fwd": (g * M, N, K), "bwd-grad-act": (g * M, K, N),
                "bwd-grad-w": (g * N, K, M)}[stage]
        assert (int(r["m"]), int(r["n"]), int(r["k"]), int(r["groups"])) == (*want, g)
        _, flops = kernel_ops(r)
        assert flops == pytest.approx(2.0 * g * M * N * K)
    assert stages == {"fwd": 36, "bwd-grad-act": 36, "bwd-grad-w": 36}


def test_mla_rows_carry_the_value_width():
    """The 20 MLA kernels (query/key heads 192, value heads 128) keep both widths: head_dim 192,
    v_head_dim 128, and their time re-derives SimuMax's efficiency with its FLOPs 2 (forward) or
    5 (backward) b s^2 h (d_qk + d_v) over 2,250 TFLOPS."""
    rows = [r for r in _rows() if r["v_head_dim"]]
    assert len(rows) == 20
    for r in rows:
        assert (r["head_dim"], r["v_head_dim"]) == ("192", "128")
        eff = float(r["source"].rsplit(": ", 1)[1])
        factor = 2 if r["kind"] == "attention_fwd" else 5
        b, s, h = int(r["batch"]), int(r["seq_len"]), int(r["heads"])
        ms = factor * b * s * s * h * 320 / (eff * 2250e12) * 1e3
        assert float(r["measured_value"]) == pytest.approx(ms, rel=1e-3)
    assert all(r["v_head_dim"] == "" for r in _rows() if r["kind"] == "gemm")


def test_v_head_dim_column_prices_an_mla_kernel():
    """A row with ``v_head_dim`` is the op with both widths (its mean as ``head_dim``, the query/
    key width as ``qk_head_dim``) and FLOPs 2 b s^2 h (d_qk + d_v), halved when causal; without
    the column the same row is a 192-wide value head, more work."""
    ops, flops = kernel_ops(_attn_row())
    op = ops[0]
    assert isinstance(op, Attention)
    assert (op.head_dim, op.qk_head_dim) == (160, 192)
    assert flops == pytest.approx(2.0 * 4096**2 * 16 * 320 * 0.5)
    mla = predict_kernel_row(_attn_row()).predicted
    wide = predict_kernel_row(_attn_row(v_head_dim="")).predicted
    assert mla < wide


def test_v_head_dim_column_refuses_what_it_cannot_price():
    """An odd sum of the two widths (the op counts their mean) and the column on a GEMM row are
    one-line errors naming the columns."""
    with pytest.raises(ConfigError, match="v_head_dim"):
        kernel_ops(_attn_row(v_head_dim="127"))
    gemm = {"id": "g", "gpu": "b200-sxm-180gb", "kind": "gemm", "implementation": "cublas",
            "dtype": "bf16", "m": "4096", "n": "4096", "k": "4096", "v_head_dim": "128",
            "measured_value": "1000", "measured_unit": "TFLOP/s"}
    with pytest.raises(ConfigError, match="v_head_dim"):
        kernel_ops(gemm)


def test_backward_critical_path_binds_only_on_few_ctas():
    """A warp-specialised causal backward takes at least its heaviest key block (a head's first,
    which runs every query block): 4 heads of 4k tokens (128 CTAs) on the B200's 148 SMs take
    32 / (4 x 528 / 148) = 2.24x the mean load, 8 heads 1.12x, 16 heads and more none; FA2's
    own tail, non-causal and forward ops and Hopper (whose cuDNN records follow the per-head
    dispatch of ``causal_backward_tail``) get none from it."""
    b200 = catalog_gpu("b200-sxm-180gb")

    def op(heads: int, impl: str = "cudnn", backward: bool = True, causal: bool = True):
        return Attention("a", 1, heads, heads, 4096, 4096, 128, causal=causal,
                         backward=backward, impl=impl)  # type: ignore[arg-type]

    assert warp_specialised_bwd_tail(op(4), (128, 128), b200) == pytest.approx(32 / (4 * 528 / 148))
    assert warp_specialised_bwd_tail(op(8), (128, 128), b200) == pytest.approx(32 / (8 * 528 / 148))
    assert warp_specialised_bwd_tail(op(16), (128, 128), b200) == 1.0
    for other in (op(4, impl="flash2"), op(4, backward=False), op(4, causal=False)):
        assert warp_specialised_bwd_tail(other, (128, 128), b200) == 1.0
    assert warp_specialised_bwd_tail(op(4), (128, 128), catalog_gpu("h100-sxm-80gb")) == 1.0
    assert warp_specialised_bwd_tail(op(4, impl="flash4"), (128, 128), catalog_gpu("gb200")) > 2


def test_node_kernels_within_bounds():
    """Every row priced. Small-head causal backwards (4-8 heads at 4k) within 10 % (2026-11-28,
    simumax54: -52..-16 % before the critical path, -6..+4 % with it); the MLA rows fast by at
    most 40 % (-36..-1 %); the grouped GEMMs all priced fast (TE's grouped GEMM on this node runs
    below the dense GEMMs' rate, as those do: benchmarks/RESULTS.md, 54th session, simumax54)."""
    _, res = validated(KERNELS)
    assert len(res) == 686 and all(r.error is None for r in res)
    err = {r.id: r.predicted / r.measured - 1 for r in res}
    small = [e for i, e in err.items() if re.search(r"attn-bwd-s4096-h[48]-", i)]
    assert len(small) == 6 and all(abs(e) <= 0.10 for e in small), small
    mla = [e for i, e in err.items() if "-dv128" in i]
    assert len(mla) == 20 and all(-0.40 <= e <= 0.0 for e in mla), mla
    grouped = [e for i, e in err.items() if "-ggemm-" in i]
    assert len(grouped) == 108 and all(e > 0 for e in grouped)


def test_accumulating_gemm_reads_and_writes_its_buffer():
    """A note saying the GEMM accumulates into an fp32 (bf16) buffer prices the epilogue's read
    and write of it (``Gemm.accumulate_bytes`` 4 or 2, as a training step's weight gradient into
    ``main_grad``); "no accumulate" or a fresh output 0. The node's grouped weight gradients into
    the fp32 main_grad ran at 0.55-0.57x the bf16 ones' rate at 128-154 rows a group (174-211
    against 318-334 TFLOP/s): priced +124 % fast on average without it, +50 % with it
    (2026-11-28, simumax54)."""
    from trainsim.validate.kernel_accumulate import accumulate_bytes

    assert accumulate_bytes("accumulated into the fp32 main_grad (read and written)") == 4
    assert accumulate_bytes("TE general_gemm, accumulated into the bf16 output") == 2
    assert accumulate_bytes("accumulate=False, output fp32") == 0
    assert accumulate_bytes("") == 0
    row = {"id": "w", "gpu": "b200-sxm-180gb", "kind": "gemm_grouped", "implementation": "te",
           "dtype": "bf16", "m": "1048576", "n": "7168", "k": "128", "groups": "256",
           "measured_value": "174", "measured_unit": "TFLOP/s",
           "note": "weight gradient, accumulated into the fp32 main_grad"}
    (op,), _ = kernel_ops(row)
    assert op.accumulate_bytes == 4
    fresh = predict_kernel_row({**row, "note": "weight gradient"}).predicted
    assert predict_kernel_row(row).predicted < 0.7 * fresh  # the rate: fp32 traffic dominates
    rows = [r for r in _rows() if "-ggemm-" in r["id"] and "-bwd-grad-w-" in r["id"]]
    assert len(rows) == 36 and all(accumulate_bytes(r["note"]) in (2, 4) for r in rows)


def test_gemm_rate_by_call_length():
    """The node's dense GEMMs (m, n, k >= 2048) by the time of one call (``--durations``):
    calls under 0.1 ms run at trainsim's one-GPU price (median 0.93x), every longer bin at a
    median ~1,070-1,120 TFLOPS, 0.68-0.76x the price, and the fastest call of a bin falls from
    ~1,470 to ~1,150 TFLOPS as calls lengthen: the node's sustained GEMM rate is below the
    catalog's (a power limit or clock would do it; SimuMax states neither, so no rate changed)."""
    from helpers import load_script

    gen = load_script(ROOT / "benchmarks" / "simumax_b200_gemms.py")
    table = [line.split(" | ") for line in gen.durations()[1:]]
    assert [t[0] for t in table] == ["0.1", "0.2", "0.5", "1", "2", "5", "inf"]
    ratio = [float(t[5]) for t in table]
    assert 0.85 <= ratio[0] <= 1.05
    assert all(0.6 <= r <= 0.8 for r in ratio[1:]), ratio
    assert all(1000 <= float(t[2]) <= 1150 for t in table[1:])
    assert float(table[1][3]) > 1400 and float(table[-1][3]) < 1200


def test_hopper_cudnn_backward_records_follow_the_per_head_tail():
    """Why the critical path is Blackwell's only: the bundled H100 and H200 databases' 32 cuDNN
    9.19 causal backward records (b 1, 4-64 heads, 4k and 8k) run 0.92-1.74x the model alone but
    0.86-0.98x the model times FA2's per-head heavy-first tail (``causal_backward_tail``), a
    different dispatch (benchmarks/bwd_tail54.py --hopper)."""
    from helpers import load_script

    table = [line.split() for line in load_script(ROOT / "benchmarks" / "bwd_tail54.py").hopper()[1:]]
    assert len(table) == 32
    alone = [float(t[3]) for t in table]
    tailed = [float(t[5]) for t in table]
    assert max(alone) > 1.6 and max(alone) - min(alone) > 0.7
    assert all(0.84 <= r <= 1.0 for r in tailed), tailed
