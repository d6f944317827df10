"""Megatron-core's combined 1F1B (--overlap-moe-expert-parallel-comm) hides all-to-alls only in
forward/backward pairs (core_v0.15.0 pipeline_parallel/combined_1f1b.py): the warm-up's
forwards and the cool-down's backwards run as without the overlap."""

from trainsim.catalog import run_config_from_dict
from trainsim.simulator import simulate


def _passes(overlap: bool, pp: int = 2) -> tuple[dict[str, float], float]:
    raw = {"model": "mixtral-8x7b",
           "parallel": {"tp": 1, "pp": pp, "ep": 8, "moe_overlap_ep_comm": overlap,
                        "distributed_optimizer": True},
           "training": {"global_batch_size": 32, "seq_length": 4096, "micro_batch_size": 1},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8 * pp}}
    r = simulate(run_config_from_dict(raw), keep_timeline=True)
    tl = r.timeline
    out = {}
    for i, t in enumerate(tl.tasks):
        if t.stream == (0, "compute") and t.label[:1] in "FB":
            out[t.label] = out.get(t.label, 0.0) + tl.end_s[i] - tl.start_s[i]
    return out, r.iteration_time_s


def test_unpaired_passes_keep_their_all_to_alls_exposed():
    paired, t_paired = _passes(True)
    alone, t_alone = _passes(False)
    # stage 0 of pp 2 over 4 micro-batches: F0 F1 (warm-up), B0 F2 B1 F3 (pairs), B2 B3 (cool-down)
    for warm in ("F mb0 c0", "F mb1 c0"):
        assert paired[warm] == alone[warm]
    for steady in ("F mb2 c0", "F mb3 c0", "B mb0 c0", "B mb1 c0"):
        assert paired[steady] < alone[steady]
    assert paired["B mb2 c0"] == alone["B mb2 c0"]
    last = [k for k in paired if k.startswith("B last")]
    assert last and sum(paired[k] for k in last) == sum(alone[k] for k in last)
    assert t_paired < t_alone


def test_without_pipelining_only_the_first_forward_and_last_backward_run_alone():
    paired, _ = _passes(True, pp=1)
    alone, _ = _passes(False, pp=1)
    assert paired["F mb0 c0"] == alone["F mb0 c0"]
    assert paired["F mb1 c0"] < alone["F mb1 c0"]
    assert paired["B mb0 c0"] < alone["B mb0 c0"]
