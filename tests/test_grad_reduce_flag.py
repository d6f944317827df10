"""Megatron-LM's --grad-reduce-in-bf16 (megatron-core 0.12 on): an empty ``grad_reduce_dtype``
cell is the default fp32 buffer unless the fastest setting of the other cells needs the 16-bit
one (``validate.row_unknowns.KEPT_DEFAULTS``, ``validate.training.tune``'s ``kept``). The row is
Megatron-LM's Llama 3.1 405B FP8 table row (benchmarks/training_mlm_llama.csv), whose
configuration NeMo v2.3.0's performance scripts state: recompute_layers 0 and
grad_reduce_in_fp32 = False under fp8 (scripts/performance/utils.py L351)."""

from __future__ import annotations

import pytest

from trainsim.memo import stage_memory
from trainsim.memory.state import model_state
from trainsim.validate.row_settings import row_profile, training_base
from trainsim.validate.row_unknowns import KEPT_DEFAULTS, bf16_reduce
from trainsim.validate.training import row_config, tune

ROW_405B = {  # mlmllama2506-llama3.1-405b-h100-1024, the cells the file states
    "id": "llama3.1-405b", "model": "llama3.1-405b", "seq_length": "8192",
    "gpu": "h100-sxm-80gb", "num_gpus": "1024", "gpus_per_node": "8", "tp": "8", "pp": "8",
    "cp": "2", "ep": "1", "vpp": "8", "global_batch_size": "512", "micro_batch_size": "1",
    "dtype": "fp8", "framework": "megatron-core", "framework_version": "0.12",
    "measured_iteration_s": "13.003175",
}
ROW_70B = {**ROW_405B, "id": "llama3-70b", "model": "llama3-70b", "num_gpus": "64",
           "tp": "4", "cp": "1", "vpp": "5", "global_batch_size": "128"}
H, FFN, KV = 16384, 53248, 8 * 128  # Llama 3.1 405B: 8 KV heads of 128
SETTLED = {"sequence_parallel": True, "pipeline_model_parallel_layout": "balanced",
           "dp_overlap": True, "tp_comm_overlap": True, "distributed_optimizer": True,
           "recompute": "none"}


@pytest.mark.parametrize(("framework", "version", "has"), [
    ("megatron-core", "0.11", False), ("megatron-core", "0.12", True),
    ("megatron-core", "0.16", True), ("megatron-lm", "2025-02", False),
    ("megatron-lm", "2025-03", True)])
def test_flag_arrives_with_core_v0_12(framework, version, has):
    """--grad-reduce-in-bf16 is first in NVIDIA/Megatron-LM@d165a8548b (2025-02-26), so in
    core_v0.12.0 (arguments.py L1999) and not in core_v0.11.0; a 2025-02 date is not offered it."""
    profile = row_profile({"framework": framework, "framework_version": version})
    assert bool(profile.supports("grad_reduce_bf16_flag")) is has


def test_empty_cell_offers_bf16_only_where_the_flag_acts():
    """The flag acts under --bf16 only (validate_args L582-594: fp8 runs are --bf16 runs; an
    fp16 run reduces in fp16 anyway); a stated cell and a release without the flag keep theirs;
    NeMo 24.07's fp8 default is bf16 already."""
    assert training_base(ROW_405B)[1]["grad_reduce_dtype"] == ["fp32", "bf16"]
    assert "grad_reduce_dtype" not in training_base({**ROW_405B, "grad_reduce_dtype": "fp32"})[1]
    assert "grad_reduce_dtype" not in training_base({**ROW_405B, "framework_version": "0.11"})[1]
    core = row_profile(ROW_405B)
    assert bf16_reduce({**ROW_405B, "dtype": "bf16"}, core) == ["fp32", "bf16"]
    assert bf16_reduce({**ROW_405B, "dtype": "fp16"}, core) == []
    nemo = row_profile({"framework": "nemo", "framework_version": "24.07"})
    assert bf16_reduce({**ROW_405B, "framework": "nemo", "framework_version": "24.07"},
                       nemo) == []
    assert KEPT_DEFAULTS == ("grad_reduce_dtype",)


def test_405b_gradient_buffer_by_hand():
    """Megatron-core core_v0.12.0 distributed_data_parallel.py L124: grad_dtype = torch.float
    if grad_reduce_in_fp32 else the 16-bit param dtype; param_and_grad_buffer.py L628-632 one
    buffer of that dtype over the rank's parameters. A middle pipeline rank holds 8 virtual
    stages of 2 layers (126 layers balanced over 64 chunks), each layer's QKV (GQA), output
    projection and SwiGLU MLP split over TP 8: 16 x 398.46 M parameters, 4 bytes each in fp32
    (25.5 GB), 2 in bf16; with bf16 the distributed optimizer's step adds the fp32 copy of the
    rank's shard over dp x cp = 16 ranks (distrib_optimizer.py L1988 ``.float()``)."""
    params = 16 * (H * (H + 2 * KV) + H * H + 3 * H * FFN) / 8
    fp32 = model_state(row_config(ROW_405B, {**SETTLED, "grad_reduce_dtype": "fp32"}, None), 1)
    bf16 = model_state(row_config(ROW_405B, {**SETTLED, "grad_reduce_dtype": "bf16"}, None), 1)
    assert fp32.gradients == pytest.approx(4 * params, rel=1e-4)
    assert bf16.gradients == pytest.approx(2 * params, rel=1e-4)
    assert dict(bf16.step)["fp32 main gradients"] == pytest.approx(4 * params / 16, rel=1e-4)
    assert not dict(fp32.step)


def _fake_time(cfg) -> float:
    """A stand-in for the simulation (no engine run): recompute costs, a 16-bit reduce and
    each overlap save a little, so bf16 is always the faster dtype."""
    p, t = cfg.parallel, cfg.training
    return (1.0 + {"none": 0.0, "selective": 0.1, "full": 0.33}[p.recompute]
            - 0.01 * (not t.grad_reduce_in_fp32) - 0.001 * p.overlap_grad_reduce
            - 0.001 * p.tp_comm_overlap - 0.001 * p.sequence_parallel)


def _fits(cfg) -> bool:
    return all(stage_memory(cfg, s).total <= cfg.cluster.gpu.hbm_bytes
               for s in range(cfg.parallel.pp))


def test_405b_takes_bf16_to_run_without_recompute():
    """The fp32 buffer leaves no room for recompute none (the estimate puts the middle rank
    over 80 GB); the 16-bit one does, so the tuner reduces in bf16 with no recompute, as
    NeMo's performance recipe for this table ran."""
    raw, unknown = training_base(ROW_405B)
    assert not _fits(row_config(ROW_405B, {**SETTLED, "grad_reduce_dtype": "fp32"}, None))
    assert _fits(row_config(ROW_405B, {**SETTLED, "grad_reduce_dtype": "bf16"}, None))
    _, choice = tune(raw, unknown, _fake_time, kept=KEPT_DEFAULTS)
    assert (choice["recompute"], choice["grad_reduce_dtype"]) == ("none", "bf16")


def test_70b_keeps_the_fp32_default_where_it_fits():
    """Where the fastest setting fits with the default fp32 buffer the default stays (the
    Model Zoo's recipes keep it); without ``kept`` the tuner would take bf16 for speed alone,
    as it does for a row that names no framework (``validate.unnamed``)."""
    raw, unknown = training_base(ROW_70B)
    _, choice = tune(raw, unknown, _fake_time, kept=KEPT_DEFAULTS)
    assert (choice["recompute"], choice["grad_reduce_dtype"]) == ("none", "fp32")
    _, fastest = tune(raw, unknown, _fake_time)
    assert (fastest["recompute"], fastest["grad_reduce_dtype"]) == ("none", "bf16")
