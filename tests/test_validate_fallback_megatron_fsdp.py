"""A sharded row on a framework with no profile here whose own cells say it is no FSDP2 run,
fp8 GEMMs without torch.compile (which PyTorch's fp8 training needs) or Megatron's distributed
optimizer, is predicted with Megatron-core's Megatron-FSDP, not torchtitan's FSDP2
(catalog.fallback.MEGATRON_SHARDED); attention ``eager`` selects the plain PyTorch loop, and
``unfused`` stays Megatron-core's (catalog.fallback.EAGER_ATTENTION)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.catalog.fallback import fallback_choice
from trainsim.validate.training import predict_training_row

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _row(file: str, row_id: str) -> dict[str, str]:
    with open(BENCH / file, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == row_id)
    return {**row, "framework": "otherfw"}


@pytest.mark.parametrize("cells,profile", [
    ({"fp8": True}, "megatron-core"),                        # TE's fp8 under Megatron-FSDP
    ({"fp8": True, "compiled": True}, "torchtitan"),         # torchao's float8, compiled
    ({}, "torchtitan"),                                      # 16 bits: nothing said
    ({"distributed_optimizer": "1"}, "megatron-core"),       # Megatron-FSDP v1 turns it on
    ({"distributed_optimizer": "0"}, "torchtitan"),
])
def test_what_a_sharded_row_says_of_its_engine(cells, profile):
    assert fallback_choice("3", None, False, "", "", **cells)[0] == profile


def test_megatron_fsdp_only_where_the_stack_ran_it():
    """A 2024-01 fp8 FSDP row (llm-foundry's TE layers) is before Megatron-core ran ZeRO-3
    (core_v0.12): the sharded kind's stacks of its date stand, as before."""
    name, _, why = fallback_choice("3", None, False, "2024-01", "flash2", fp8=True)
    assert name != "megatron-core" and "torch.compile" not in why
    # nor for an unsharded row: the rule reads sharded rows only
    assert fallback_choice("1", None, True, "", "sdpa", fp8=True)[0] == "pytorch"


def test_eager_attention_selects_the_plain_pytorch_loop():
    assert fallback_choice("0", None, False, "", "eager")[0] == "pytorch"
    # unfused is Megatron's kernel in the README's vocabulary (and pytorch.yaml's reading of
    # transformers' eager attention): no cell tells the two apart, Megatron-core stays
    assert fallback_choice("0", None, False, "", "unfused")[0] == "megatron-core"


def test_a_nemo_megatron_fsdp_fp8_row_lands_near_its_measurement():
    """NeMo 25.07 Llama 3 70B fp8 (current scaling) on 64 GB200, ZeRO-3 (Megatron-FSDP),
    options dp_overlap, no compile: blind it was read as torchtitan's FSDP2 (flex attention,
    eager modules, full recompute) at +54.1 %; as Megatron-FSDP -6.0 %."""
    res = predict_training_row(_row("training_nemo_perf.csv", "nemo2507-llama3-70b-gb200-64"))
    assert res.chosen["framework"] == "megatron-core"
    assert res.ape is not None and res.ape < 0.12


def test_a_torchtitan_float8_row_that_compiles_stays_fsdp2():
    """torchtitan's Llama 3.1 8B float8 row on 8 H100 (compile) stays torchtitan's (+4.0 %)."""
    res = predict_training_row(_row("training_heldout.csv",
                                    "tt2412-llama3.1-8b-8-fsdp-compile-float8"))
    assert res.chosen["framework"] == "torchtitan"
    assert res.ape is not None and res.ape < 0.10


def test_a_row_stating_the_distributed_optimizer_under_zero3_is_megatron_fsdp():
    """Megatron-core Model Zoo Qwen3-235B-A22B on 256 H100, ZeRO-3 with the distributed
    optimizer (Megatron-FSDP), bf16: blind +33.1 % as torchtitan, +0.9 % as Megatron-FSDP."""
    res = predict_training_row(_row("training_moe_modelzoo.csv",
                                    "mzoo2505-qwen3-235b-a22b-h100-256-tp1pp1ep8-fsdp"))
    assert res.chosen["framework"] == "megatron-core"
    assert res.ape is not None and res.ape < 0.10


def test_a_grace_megatron_fsdp_row_offloads_where_its_recipe_did():
    """Megatron-Bridge 25.11 Llama 3 70B fp8 (current scaling) on 64 GB200, Megatron-FSDP:
    the stack's activation offloading (Megatron-core --cpu-offloading-num-layers, no recipe of
    its own) is a memory measure for an unknown framework, taken where the fastest setting
    would not fit without it: 40 layers, as the Bridge recipe (GB200 FP8-CS 40), instead of
    full recomputation (+25.0 % -> -4.5 %)."""
    res = predict_training_row(_row("training_bridge_archive.csv",
                                    "bridgearch2511-llama3-70b-gb200-64-fp8cs"))
    assert res.chosen["framework"] == "megatron-core"
    assert res.chosen["recompute"] == "none" and res.chosen["cpu_offloading_num_layers"] == 40
    assert res.ape is not None and res.ape < 0.10


def test_offloading_is_offered_only_to_unknown_frameworks_on_a_stack_that_has_it():
    from trainsim.catalog.fallback import FALLBACK_MARK, offload_offered
    from trainsim.catalog.frameworks import framework_profile

    blind = {FALLBACK_MARK: "otherfw"}
    assert offload_offered(blind, framework_profile("megatron-core", None))
    assert not offload_offered({}, framework_profile("megatron-core", None))  # named
    assert not offload_offered(blind, framework_profile("megatron-core", "0.4"))  # before it
    assert not offload_offered(blind, framework_profile("torchtitan", None))  # none recorded


def test_a_zero3_row_read_as_megatron_core_is_said_to_run_megatron_fsdp():
    """blind56 lead 5: a ZeRO-3 row Megatron-core reads (by fp8 without torch.compile, the
    distributed optimizer, or a cuDNN attention FSDP2's models do not run) runs Megatron-FSDP;
    its read_as said "DDP or distributed optimizer"."""
    for cells in ({"fp8": True}, {"distributed_optimizer": "1"}, {"attention": "cudnn"}):
        kwargs = {"attention": cells.pop("attention", "")}
        name, _, why = fallback_choice("3", None, False, "", **kwargs, **cells)
        assert name == "megatron-core" and "Megatron-FSDP" in why and "DDP" not in why, why
    # an unsharded row read as Megatron-core keeps its DDP / distributed-optimizer reading
    assert "DDP or distributed optimizer" in fallback_choice("1", None, False)[2]
