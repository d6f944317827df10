"""benchmarks/bloom_refix.py (issue 17 item 2 diagnostic): the pairing of a 02-21 public row with
the same configuration re-measured after the fix, and the per-layer-and-step what-if, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "bloom_refix.py")


def _row(rid: str, mb: str, version: str = "2022-02", gbs: str = "2048") -> dict[str, str]:
    cells = {"hidden_size": "14336", "num_layers": "72", "num_attention_heads": "64", "tp": "8",
             "pp": "6", "num_gpus": "384", "micro_batch_size": mb, "global_batch_size": gbs}
    return {"id": rid, "framework_version": version, **cells}


def _priced(rid, mb, meas, pred, version="2022-02", gbs="2048", layers=12, steps=69):
    return {"row": _row(rid, mb, version, gbs), "meas": meas, "pred": pred, "L": layers,
            "n": steps}


def test_pairs_match_every_configuration_cell_and_skip_rows_after_the_fix():
    public = [_priced("pre-mb4", "4", 121.48, 105.0), _priced("pre-mb2", "2", 131.0, 110.0),
              _priced("prod", "4", 104.7, 104.4, version="2022-03")]
    errata = [_priced("pre-mb4", "4", 121.48, 113.39), _priced("pre-mb2", "2", 131.0, 122.0),
              _priced("prod", "4", 104.7, 107.4, version="2022-03")]
    checks = [_priced("post-a", "4", 114.11, 113.39), _priced("post-b", "4", 113.95, 113.39),
              _priced("post-g", "4", 113.01, 89.79, gbs="1568")]
    got = SCRIPT.pairs(public, errata, checks)
    # pre-mb2 has no re-measurement, prod is dated after the fix, post-g differs in the batch
    assert got == [("pre-mb4", 121.48, 113.39,
                    [("post-a", 114.11, 113.39), ("post-b", 113.95, 113.39)])]


def test_what_if_adds_c_per_layer_and_step():
    rows = [_priced("a", "1", 100.0, 90.0, layers=10, steps=100),
            _priced("b", "4", 200.0, 210.0, layers=5, steps=40)]
    assert SCRIPT.what_if(rows, 0.0) == pytest.approx((0.075, -0.025))
    # 2 ms x 10 x 100 = 2 s on a (-8 %), 2 ms x 5 x 40 = 0.4 s on b (+5.2 %)
    mape, signed = SCRIPT.what_if(rows, 2e-3)
    assert mape == pytest.approx((0.08 + 0.052) / 2)
    assert signed == pytest.approx((-0.08 + 0.052) / 2)


def test_measured_curve_reads_the_comparable_azure_rows():
    ranks, pts = SCRIPT.measured_curve()
    assert ranks == 8
    sizes = [b for b, _ in pts]
    assert sizes == sorted(sizes) and sizes[0] == 4 * 2**20 and sizes[-1] == 8 * 2**30
    assert dict(pts)[64 * 2**20] == pytest.approx(166.63e9)
    # halfway between 16 MiB (109.22) and 64 MiB (166.63) in log2 size: 32 MiB
    assert SCRIPT.curve_busbw(pts, 32 * 2**20) == pytest.approx((109.22e9 + 166.63e9) / 2)


def test_measured_all_reduce_prices_only_one_node_a100_all_reduces():
    from trainsim.collectives import nccl
    from trainsim.network import analytical

    def fabric(cc):
        link = nccl.LinkTier(bw_Bps=300e9, efficiency=0.8)
        return nccl.Fabric(intra=link, inter=nccl.LinkTier(bw_Bps=25e9, efficiency=0.9,
                                                          kind="net"), compute_capability=cc)

    one_node, two_nodes = nccl.GroupSpan(8, 8), nccl.GroupSpan(16, 8)
    size = 64 * 2**20
    model = analytical.collective_cost("all_reduce", size, one_node, fabric(80)).time_s
    with SCRIPT.measured_a100_all_reduce():
        got = analytical.collective_cost("all_reduce", size, one_node, fabric(80))
        assert got.time_s == pytest.approx(2 * 7 / 8 * size / 166.63e9)
        for args in (("all_gather", size, one_node, fabric(80)),
                     ("all_reduce", size, two_nodes, fabric(80)),
                     ("all_reduce", size, one_node, fabric(90)),
                     ("all_reduce", 2**20, one_node, fabric(80))):
            assert analytical.collective_cost(*args) == nccl.collective_cost(*args)
    assert analytical.collective_cost("all_reduce", size, one_node, fabric(80)).time_s == model


def test_one_process_curve_reads_the_mpirun_sweep():
    """The one-process-per-GPU A100 sweep (``thanos-...-np8-*``, mpirun -np 8 -g 1) gives a
    curve of its own: 8 ranks, 1 MiB-4 GiB, above the Azure -g 8 curve at 16 and 64 MiB."""
    ranks, pts = SCRIPT.measured_curve(prefix=SCRIPT.ONE_PROCESS_A100)
    _, azure = SCRIPT.measured_curve()
    assert ranks == 8 and len(pts) == 13
    assert pts[0][0] == 2**20 and pts[-1][0] == 4 * 2**30
    for size in (16 * 2**20, 64 * 2**20):
        assert SCRIPT.curve_busbw(pts, size) > 1.1 * SCRIPT.curve_busbw(azure, size)
