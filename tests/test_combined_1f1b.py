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


def test_interleaved_warm_up_forwards_run_alone_including_the_first_after_its_gather():
    """pp 4, vpp 2, dp 16 under Megatron-core (overlap_param_gather, the first chunk bucketed:
    its first forward waits for the gathers): every forward before stage 0's first backward,
    the first one included, runs as without the overlap; the steady ones are paired."""
    def stage0(overlap: bool) -> list[tuple[str, float]]:
        raw = {"model": "mixtral-8x7b",
               "parallel": {"tp": 1, "pp": 4, "vpp": 2, "ep": 8, "moe_overlap_ep_comm": overlap,
                            "distributed_optimizer": True, "overlap_param_gather": True},
               "training": {"global_batch_size": 128, "seq_length": 4096, "micro_batch_size": 1,
                            "framework": "megatron-core", "framework_version": "0.15"},
               "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 64}}
        tl = simulate(run_config_from_dict(raw), keep_timeline=True).timeline
        return [(t.label, tl.end_s[i] - tl.start_s[i]) for i, t in enumerate(tl.tasks)
                if t.stream == (0, "compute") and t.label[:1] in "FB"]
    paired, alone = stage0(True), stage0(False)
    assert [label for label, _ in paired] == [label for label, _ in alone]
    first_b = next(i for i, (label, _) in enumerate(paired) if label.startswith("B"))
    assert first_b > 1
    for (label, t_on), (_, t_off) in zip(paired[:first_b], alone[:first_b]):
        assert t_on == t_off, label
    steady = [i for i in range(first_b, len(paired)) if paired[i][0].startswith("F")]
    assert steady and all(paired[i][1] < alone[i][1] for i in steady)
