"""benchmarks/pair_timeline.py: the walk of one combined-1F1B layer pair and its what-ifs."""

from pathlib import Path

import pytest
from helpers import load_script

from trainsim.workload.ops import Comm, Elementwise

pt = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "pair_timeline.py")


def _ew(name: str, kernels: int = 1, sync: bool = False) -> Elementwise:
    return Elementwise(name, bytes=1.0, kernels=kernels, host_sync=sync)


def _a2a(name: str) -> Comm:
    return Comm(name, "all_to_all", 1.0, "ep")


# a toy pair: every exchange 1.0 s, the compute nodes short beside them
F = {"attn": [_ew("f_attn")], "post": [_ew("f_copy", sync=True)],
     "disp": [_a2a("f_disp")], "mlp": [_ew("f_mlp", kernels=2)], "comb": [_a2a("f_comb")]}
B = {"comb": [_a2a("b_comb")], "mlp": [_ew("b_mlp", kernels=2)], "disp": [_a2a("b_disp")],
     "post": [_ew("b_post")], "attn": [_ew("b_attn")]}
TIME = {"f_attn": 0.2, "f_copy": 0.1, "f_mlp": 0.5, "b_mlp": 0.5, "b_post": 0.1, "b_attn": 0.5,
        "f_disp": 1.0, "f_comb": 1.0, "b_comb": 1.0, "b_disp": 1.0}


def _time(op):
    return TIME[op.name]


def test_started_waits_for_the_kernel_running_when_the_exchange_is_ready():
    busy = [(0.0, 4.0, 4)]  # four kernels of 1 s
    assert pt._started(1.5, busy) == pytest.approx(2.0)
    assert pt._started(3.0, busy) == pytest.approx(3.0)  # between two kernels: no wait
    assert pt._started(0.0, busy) == 0.0  # starts with the op: the op was issued first
    assert pt._started(4.5, busy) == 4.5


def test_a_pair_whose_exchanges_outlast_its_compute_takes_their_sum():
    assert pt.period_s(F, B, _time, 0.0) == pytest.approx(4.0)


def test_the_host_binds_once_its_work_per_pair_outlasts_the_gpu():
    # 10 schedule nodes at 1 s each: the host's 10 s per pair, above the exchanges' 4 s
    assert pt.period_s(F, B, _time, 0.0, node_s=1.0) == pytest.approx(10.0)
    assert pt.period_s(F, B, _time, 0.0, node_s=0.01) == pytest.approx(4.0)


def test_waiting_for_the_running_kernel_never_shortens_the_pair():
    plain = pt.period_s(F, B, _time, 1e-3)
    assert pt.waited_period_s(F, B, _time, 1e-3) >= plain - 1e-12


def test_the_exchange_growth_is_the_published_ratio():
    # 3,958.997 ms at 36.55 % against 9.079 ms at 0.11 %
    assert pt.EXCHANGE_GROWTH == pytest.approx((3958.997 / 0.3655) / (9.079 / 0.0011), rel=1e-3)


def test_clear_of_moves_a_span_past_every_span_it_would_meet():
    held = [(0.0, 1.0), (1.2, 2.0)]
    assert pt._clear_of(0.5, 1.0, held) == 2.0  # meets (0, 1), then at 1.0 meets (1.2, 2)
    assert pt._clear_of(1.0, 0.2, held) == 1.0  # fits the gap between them
    assert pt._clear_of(3.0, 5.0, held) == 3.0


def test_kernels_that_hold_every_sm_never_run_beside_an_exchange():
    # hand count: the exchanges (4 x 1.0 s) run back to back on the comm stream; the two MLP
    # nodes (0.5 s each) may not run beside any of them, the rest (0.9 s) still hides: 5.0 s
    mlps = pt.period_s(F, B, _time, 0.0, exclusive=lambda op: op.name in ("f_mlp", "b_mlp"))
    assert mlps == pytest.approx(5.0)
    # every compute op exclusive: nothing hides, the pair is its whole work in series
    assert pt.period_s(F, B, _time, 0.0, exclusive=lambda op: True) == pytest.approx(1.9 + 4.0)
    assert pt.period_s(F, B, _time, 0.0, exclusive=lambda op: False) == pytest.approx(4.0)


def test_a_static_persistent_kernel_beside_an_exchange_waits_for_its_sms():
    # the workers of the exchange's SMs start when it ends (0.1 s in), at most after the
    # other workers' 0.5 s, then run their whole 0.5 s share
    assert pt._static_time(0.0, 0.5, [(-0.2, 0.1)]) == pytest.approx(0.6)
    assert pt._static_time(0.0, 0.5, [(-1.0, 2.0)]) == pytest.approx(1.0)
    assert pt._static_time(0.0, 0.5, [(0.2, 2.0)]) == 0.5  # starts after the kernel
    assert pt._static_time(0.0, 0.5, []) == 0.5
    # an exchange ready while such kernels hold every SM starts when the last of them ends
    assert pt._past(0.5, [(0.0, 1.0), (1.0, 2.0)]) == 2.0
    assert pt._past(2.0, [(0.0, 1.0), (1.0, 2.0)]) == 2.0


def test_static_persistent_kernels_lie_between_sharing_and_exclusion():
    plain = pt.period_s(F, B, _time, 0.0)
    mlps = ("f_mlp", "b_mlp")
    static = pt.period_s(F, B, _time, 0.0, static=lambda op: op.name in mlps)
    excl = pt.period_s(F, B, _time, 0.0, exclusive=lambda op: op.name in mlps)
    assert plain - 1e-12 <= static <= excl + 1e-12


def test_in_order_start_waits_for_the_kernel_issued_before():
    assert pt._in_order(1.0, 2.0) == 2.0  # ready first, but issued after a kernel starting at 2
    assert pt._in_order(3.0, 2.0) == 3.0


def test_one_queue_holds_the_dispatch_behind_the_backward_mlp():
    # compute hides every exchange with separate queues: the pair is its compute, 6.2 s
    # (f.attn 1 + f.post 0.1 + b.mlp 2 + f.mlp 1 + b.post 0.1 + b.attn 2). One queue: the
    # forward's dispatch (1.5 s), issued after b.mlp's second kernel, starts when that kernel
    # does (1 s into b.mlp) and ends 0.5 s after b.mlp; the forward's MLP waits for it: 6.7 s
    f = {"attn": [_ew("f_attn")], "post": [_ew("f_copy", sync=True)],
         "disp": [_a2a("f_disp")], "mlp": [_ew("f_mlp")], "comb": [_a2a("f_comb")]}
    b = {"comb": [_a2a("b_comb")], "mlp": [_ew("b_mlp1"), _ew("b_mlp2")],
         "disp": [_a2a("b_disp")], "post": [_ew("b_post")], "attn": [_ew("b_attn")]}
    t = {"f_attn": 1.0, "f_copy": 0.1, "f_mlp": 1.0, "b_mlp1": 1.0, "b_mlp2": 1.0,
         "b_post": 0.1, "b_attn": 2.0, "f_disp": 1.5, "f_comb": 1.0, "b_comb": 1.0,
         "b_disp": 1.0}
    assert pt.period_s(f, b, lambda op: t[op.name], 0.0) == pytest.approx(6.2)
    assert pt.period_s(f, b, lambda op: t[op.name], 0.0, one_queue=True) == pytest.approx(6.7)
    # the toy pair above, whose exchanges run back to back (4.0 s): its forward dispatch now
    # waits for the second of b.mlp's two kernels (0.25 s after b.mlp starts, as the
    # backward's combine ends): 4.25 s
    assert pt.period_s(F, B, _time, 0.0, one_queue=True) == pytest.approx(4.25)
