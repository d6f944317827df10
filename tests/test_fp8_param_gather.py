"""The distributed optimizer's parameter all-gather under fp8 weights (training.fp8_param_gather):
matmul weights at one byte, the rest at two (workload.fp8_gather.param_gather_width)."""

from __future__ import annotations

import pytest

from tests.helpers import mirror_source
from trainsim import run_config_from_dict, simulate
from trainsim.workload.fp8_gather import FP8_BUFFER_RECIPES, param_gather_width


def cfg(dtype="fp8", recipe="current", fp8_gather=True, gpu="b200-sxm-180gb"):
    return run_config_from_dict({
        "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
                  "ffn_hidden_size": 4096, "vocab_size": 32000, "activation": "swiglu",
                  "normalization": "rmsnorm", "position_embedding": "rope",
                  "tied_embeddings": False, "add_bias_linear": False},
        "parallel": {"tp": 2, "pp": 2, "vpp": 2, "sequence_parallel": True,
                     "distributed_optimizer": True, "overlap_grad_reduce": True,
                     "overlap_param_gather": True, "dp_buckets": "every_chunk"},
        "training": {"global_batch_size": 256, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": dtype, "fp8_recipe": recipe, "fp8_param_gather": fp8_gather},
        "cluster": {"gpu": gpu, "num_gpus": 256, "gpus_per_node": 8, "nic_gbit_s_per_gpu": 400},
    })


def _gather_s(c) -> float:
    tl = simulate(c, keep_timeline=True).timeline
    return sum(t.duration_s for t in tl.tasks if t.label.startswith("param all-gather"))


# Hand calculation for ``cfg``: a rank's (tp 2) layer holds QKV 1,572,864, the output
# projection 524,288, fc1 4,194,304 and fc2 2,097,152 matmul elements (8,388,608) and two
# RMSNorms of 512; pipeline rank 0 (pp 2, vpp 2) holds layers 0-1 and 4-5 and the word
# embedding (32000 x 1024 / 2 = 16,384,000), pipeline rank 1 layers 2-3, 6-7, the final norm
# (512) and the output layer (16,384,000).
STAGE0 = 4 * (8_388_608 + 1024) + 16_384_000
FP8_STAGE0 = 4 * 8_388_608


def test_fp8_weights_are_gathered_at_one_byte_the_rest_at_two():
    """Per-tensor (delayed, current) and blockwise fp8 weights sit in the uint8 parameter buffer;
    the embedding and the norms stay 16-bit: the mean width is their weighted mean."""
    hand = (FP8_STAGE0 * 1 + (STAGE0 - FP8_STAGE0) * 2) / STAGE0
    for recipe in ("delayed", "current", "blockwise"):
        c = cfg(recipe=recipe)
        assert param_gather_width(c, STAGE0, FP8_STAGE0) == pytest.approx(hand, rel=1e-12)
    assert param_gather_width(cfg(), 100.0, 100.0) == 1.0


def test_mxfp8_bf16_and_flag_off_gather_two_bytes():
    """MXFP8 weights are gathered in the bf16 view of the gradient buffer (core_v0.14.0), and
    without fp8 weights (bf16 run, or fp8 GEMMs with 16-bit weights) every element is 16-bit."""
    for c in (cfg(recipe="mxfp8"), cfg(dtype="bf16"), cfg(fp8_gather=False)):
        assert param_gather_width(c, STAGE0, FP8_STAGE0) == 2.0


def test_the_simulated_gather_carries_the_stage_bytes():
    """The task graph's width for pipeline rank 0 is the hand figure: the stage's layer
    parameters (norms included, 4,096 of 49.9 million) as fp8, the word embedding as 16-bit."""
    from trainsim.pricing import Pricer
    from trainsim.simulator import build_graph

    c = cfg(recipe="current")
    g = build_graph(c, Pricer(c))
    dense = g.groups[0][0][0]
    assert dense == pytest.approx(STAGE0, rel=1e-12)
    hand = (FP8_STAGE0 + (STAGE0 - FP8_STAGE0) * 2) / STAGE0
    assert g.gather_width[0]["dp_cp"] == pytest.approx(hand, rel=1e-4)


def test_fp8_gathers_take_less_time_only_where_the_buffer_is_uint8():
    """Fewer bytes, less gather time: current scaling's gathers are faster than the same run's
    with 16-bit weights; MXFP8's take the 16-bit time."""
    fp8 = _gather_s(cfg(recipe="current"))
    bf16_weights = _gather_s(cfg(recipe="current", fp8_gather=False))
    mx = _gather_s(cfg(recipe="mxfp8"))
    mx_off = _gather_s(cfg(recipe="mxfp8", fp8_gather=False))
    assert fp8 < 0.9 * bf16_weights
    assert mx == pytest.approx(mx_off, rel=1e-12)


def test_the_buffer_dtypes_are_the_ones_in_megatron_core():
    """Where the Megatron-LM mirror is at hand: fp8 parameters get a torch.uint8 buffer, and
    MXFP8 parameters under the distributed optimizer share the gradient buffer (skipped
    without the mirror)."""
    ddp = mirror_source("NVIDIA+Megatron-LM", "core_v0.14.0",
                        "megatron/core/distributed/distributed_data_parallel.py")
    buf = mirror_source("NVIDIA+Megatron-LM", "core_v0.14.0",
                        "megatron/core/distributed/param_and_grad_buffer.py")
    assert "if is_float8tensor(param):" in ddp and "param_dtype = torch.uint8" in ddp
    assert "any(is_mxfp8tensor(p) for p in params)" in buf
    assert "self.param_data = self.shared_buffer" in buf
    assert FP8_BUFFER_RECIPES == {"delayed", "current", "blockwise"}


def test_search_bounds_stay_below_the_simulation_with_fp8_gathers():
    """The search's bounds price the gathers after the step at the simulator's widths, so with
    fp8 weights (no gather overlap: the gathers follow the step) they stay below its time."""
    import dataclasses
    import random

    from tests.helpers import make_base
    from trainsim.search import SearchSpace
    from trainsim.search.evaluation import Bounds, evaluate, lower_bound_s

    b = make_base(dtype="fp8", gpus=32, batch=64)
    b = dataclasses.replace(b, training=dataclasses.replace(
        b.training, fp8_recipe="current", fp8_param_gather=True))
    rng = random.Random(1)
    space = SearchSpace()
    bounds = Bounds(b)
    keys = [k for k in space.memory_keys(b, 32)]
    checked = 0
    for k in rng.sample(keys, min(20, len(keys))):
        for c in space.variants(k):
            if c.overlap_param_gather or not c.overlap_grad_reduce:
                continue
            t = evaluate(c, b).iteration_time_s
            assert lower_bound_s(k, b) < t
            assert bounds.refined(c) < t
            checked += 1
            break
    assert checked > 0 and bounds.failed is None


def _bridge(recipe: str | None, **training):
    """A Megatron-Bridge 25.11 fp8 run of ``cfg``'s model that leaves fp8_param_gather out."""
    run = {
        "model": {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
                  "ffn_hidden_size": 4096, "vocab_size": 32000},
        "parallel": {"tp": 2, "distributed_optimizer": True},
        "training": {"global_batch_size": 256, "micro_batch_size": 1, "seq_length": 2048,
                     "dtype": "fp8", "framework": "megatron-bridge",
                     "framework_version": "25.11", **training},
        "cluster": {"gpu": "b200-sxm-180gb", "num_gpus": 64, "gpus_per_node": 8},
    }
    if recipe is not None:
        run["training"]["fp8_recipe"] = recipe
    return run_config_from_dict(run).training


def test_bridge_keeps_fp8_weights_for_every_recipe_but_blockwise():
    """Megatron-Bridge's mixed-precision recipes (v0.2.0 training/mixed_precision.py) set
    fp8_param_gather True for delayed, current (tensorwise) and MXFP8 scaling and False for
    subchannel (128x128 blockwise) scaling, the perf scripts' fp8_sc: the profile's default
    follows the run's recipe, its own default recipe (current) where the run names none, and a
    stated flag wins."""
    assert _bridge(None).fp8_recipe == "current" and _bridge(None).fp8_param_gather is True
    for recipe in ("delayed", "current", "mxfp8"):
        assert _bridge(recipe).fp8_param_gather is True
    assert _bridge("blockwise").fp8_param_gather is False
    assert _bridge("BlockWise").fp8_param_gather is False
    assert _bridge("blockwise", fp8_param_gather=True).fp8_param_gather is True
    assert _bridge("current", fp8_param_gather=False).fp8_param_gather is False


def test_bridge_blockwise_gathers_its_weights_at_two_bytes():
    """Without fp8 weights a blockwise run's parameter all-gather is 16-bit throughout."""
    c = cfg(recipe="blockwise", fp8_gather=_bridge("blockwise").fp8_param_gather)
    assert param_gather_width(c, STAGE0, FP8_STAGE0) == 2.0


def test_bridge_recipes_set_the_flag_as_the_profile_says():
    """Where the Megatron-Bridge mirror is at hand: the subchannel (blockwise) recipe turns fp8
    weights off, the current-scaling and MXFP8 recipes on (skipped without the mirror)."""
    src = mirror_source("NVIDIA-NeMo+Megatron-Bridge", "v0.2.0",
                        "src/megatron/bridge/training/mixed_precision.py")
    body = src.split("def bf16_with_fp8_subchannel_scaling_mixed")[1].split("@register")[0]
    assert 'cfg.fp8_recipe = "blockwise"' in body and "cfg.fp8_param_gather = False" in body
    for name in ("bf16_with_fp8_current_scaling_mixed", "bf16_with_mxfp8_mixed"):
        body = src.split(f"def {name}()")[1].split("@register")[0]
        assert "cfg.fp8_param_gather = True" in body
