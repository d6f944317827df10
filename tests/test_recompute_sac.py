"""torchtitan's selective recompute is per-op checkpointing (parallelize_llama.py ``_save_list``
with its every-other-matmul policy): the backward re-runs what the policy did not save."""

from __future__ import annotations

from trainsim.catalog import run_config_from_dict
from trainsim.workload.layers import layer_forward
from trainsim.workload.ops import Attention, Comm, Gemm
from trainsim.workload.recompute import layer_recompute
from trainsim.workload.shard import shard_of


def _cfg(framework: str, version: str, tp: int = 1):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": tp, "sequence_parallel": tp > 1, "recompute": "selective"},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192,
                     "framework": framework, "framework_version": version},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


def _redo(cfg):
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    return fwd, layer_recompute(cfg, sh, fwd)


def test_per_op_sac_reruns_every_other_matmul_and_what_no_policy_saves():
    fwd, redo = _redo(_cfg("torchtitan", "2024-12"))
    gemms = [op.name for op in fwd if isinstance(op, Gemm)]
    assert len(gemms) == 7  # wq, wk, wv, wo, w1, w3, w2 as separate projections
    again = [op.name.removeprefix("recompute.") for op in redo]
    assert [g for g in gemms if g in again] == gemms[1::2]  # wk, wo, w3
    assert not any(isinstance(op, Attention) for op in redo)  # SDPA output and LSE saved
    for name in ("attn_norm", "mlp_norm", "rope"):
        assert any(n.startswith(name) for n in again), name
    assert len(redo) > len(gemms[1::2])  # the elementwise ops run again too


def test_per_op_sac_under_sequence_parallel_regathers_but_keeps_reduce_scatters():
    _, redo = _redo(_cfg("torchtitan", "2024-12", tp=2))
    comms = [op for op in redo if isinstance(op, Comm)]
    assert comms and all(op.kind == "all_gather" for op in comms)


def test_megatron_selective_recompute_stays_module_based():
    # Megatron-core's default --recompute-modules core_attn: the attention alone runs again
    # (attention.py _checkpointed_attention_forward, whatever the backend), no per-op policy
    _, redo = _redo(_cfg("megatron-core", "0.8"))
    assert [type(op) for op in redo] == [Attention]


def _fp8_torchtitan(compile_: bool):
    return run_config_from_dict({
        "model": {"preset": "llama3-8b"},
        "parallel": {"tp": 1},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": "fp8", "compile": compile_, "framework": "torchtitan",
                     "framework_version": "2024-12"},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}})


def test_compiled_float8_casts_a_shared_input_once():
    """torchao's Float8Linear casts its own input; eager, q, k and v (and gate and up) each cast
    the same tensor, compiled AOTAutograd's CSE leaves one cast per input."""
    def casts(cfg):
        return [op.name for op in layer_forward(cfg, shard_of(cfg)) if "cast" in op.name]
    eager, compiled = casts(_fp8_torchtitan(False)), casts(_fp8_torchtitan(True))
    assert len(eager) == 7  # one per projection
    assert compiled == ["q_proj.cast_transpose", "out_proj.cast_transpose",
                        "gate_proj.cast_transpose", "fc2.cast_transpose"]
