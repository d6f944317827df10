"""benchmarks/bridge41_overlap_need.py: what the H100 expert-overlap A/Bs ask of a layer pair."""

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.ep_pairs import exposed, moe_sides
from trainsim.pricing import Pricer
from trainsim.workload.layers import backward_of, layer_forward
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
need = load_script(BENCH / "bridge41_overlap_need.py")
ab = load_script(BENCH / "ep_overlap_pairs.py")


def _ab_config(row_id: str):
    row = next(r for r in ab.read_rows() if r["id"] == row_id)
    return ab.run_config(row)


def test_need_arithmetic_by_hand():
    # off: measured 10 s, priced 9 s (1 s fast); on: measured 8 s, priced 6 s (2 s fast);
    # 1,000 pairs: the overlapped row needs 2 ms a pair, net of its twin's error 1 ms
    n = need.Need("x", (10.0, 8.0), (9.0, 6.0), 1000.0, 0.004, 0.001, 0.15, 2)
    assert n.absolute == pytest.approx(0.002)
    assert n.differential == pytest.approx(0.001)
    assert "+2.000 (+50.0)" in need.table([n]) and "+1.000 (+25.0)" in need.table([n])


def test_pairs_of_the_bridge_ab():
    # Qwen3-30B-A3B: GBS 1024, MBS 1, 16 GPUs at EP 16 (DP 16): 64 micro-batches per rank,
    # 48 MoE layers, PP 1 (qwen3_workload_base_configs.py; the model's config.json)
    cfg = _ab_config("bridge-qwen3-30b-a3b-h100-16-ep16-alltoall-overlap")
    assert need.step_pairs(cfg) == 64 * 48


def test_the_pair_hides_every_exchange_by_its_order_alone():
    # the finding: without the SMs an exchange holds, the pair's three phases leave none of
    # the all-to-all A/B's exchanges exposed; all its exposure is the share priced beside them
    cfg = _ab_config("bridge-qwen3-30b-a3b-h100-16-ep16-alltoall-overlap")
    pricer, sh = Pricer(cfg), shard_of(cfg)
    lf = layer_forward(cfg, sh, moe=True)
    lb = layer_recompute(cfg, sh, lf, whole=False) + backward_of(lf, sh)
    s = moe_sides(pricer, lf, lb)
    assert exposed(s.fwd_side, s.bwd_side, 0.0, 0.0) == 0.0
    comm, exp, share = need.pair_figures(cfg)
    f, b = s.fwd_side, s.bwd_side
    assert comm == pytest.approx(f.dispatch + f.combine + b.dispatch + b.combine)
    assert 0.0 < exp < comm and share == pricer.sm_share["ep"]


@pytest.mark.slow
def test_the_three_ab_needs():
    needs = [need.need(*p) for p in need.PAIRS]
    by = {n.dispatcher: n for n in needs}
    # both overlapped rows with large exchanges are priced fast by > 1 ms a pair
    assert by["deepep"].absolute > 1e-3 and by["alltoall"].absolute > 1e-3
    # HybridEP's overlapped row is within 0.2 ms a pair; its twin is the faster-priced one
    assert abs(by["hybridep"].absolute) < 2e-4 and by["hybridep"].differential < 0


def test_nsight_figures_read_as_seconds():
    # 9.079 ms is 0.11 % of the "off" communication union: 8.25 s; 3,958.997 ms is 36.55 %
    # of the "on" one: 10.83 s (SKILL.md @ 415e90a L119-122)
    assert need.NSIGHT["off"][2] == pytest.approx(8.2536, rel=1e-4)
    assert need.NSIGHT["on"][2] == pytest.approx(10.8317, rel=1e-4)
    off = {"other_s": 1.0}
    on = {"other_s": 3.0}
    text = need.nsight_table(22.0, 20.0, (off, on), 5.0)
    # measured: idle 24.7138 - 22.821 = 1.89 s off, 21.0725 - 21.221 = -0.15 s on
    assert "| off, measured | 24.71 | 22.82 | +1.89 |" in text
    assert "| on, measured | 21.07 | 21.22 | -0.15 |" in text
    # trainsim here: idle 1 -> 3 s (-2 s of saving), GPU-active 21 -> 17 s (+4 s)
    assert "trainsim 2.00 s = GPU idle -2.00 s + GPU-active +4.00 s" in text
    assert "measured 3.64 s = GPU idle +2.04 s + GPU-active +1.60 s" in text


def test_pair_walk_parts_add_up():
    cfg = _ab_config("bridge-qwen3-30b-a3b-h100-16-ep16-hybridep-overlap")
    comm, exp, share = need.pair_figures(cfg)
    n = need.Need("hybridep", (1.0, 1.0), (1.0, 1.0), 1.0, comm, exp, share, 2)
    w = need.pair_walk(cfg, n)
    # the pair as trainsim prices it: GPU work + host waits + exposure; measured = priced here
    assert w.trainsim == pytest.approx(w.gpu + w.host + exp)
    assert w.needed == pytest.approx(w.trainsim)
    # 142 launches at the host's 30 us each (compute.host.HOST_S_PER_KERNEL): 134 before the
    # 51st session counted the QKV split's copies (3 forward, its cat back), the q/k norms and
    # RoPE once per tensor (+1 each way each)
    assert w.launches == pytest.approx(142 * 30e-6, rel=0.05)
