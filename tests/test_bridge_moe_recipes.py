"""benchmarks/bridge_moe_recipes.py: Megatron-Bridge's MoE presets read with ast, and the check
that no structural rule gives their expert all-to-all overlap."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script, mirror_source

SCRIPT = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "bridge_moe_recipes.py")

TOY = '''
from dataclasses import replace
BASE = WorkloadBaseConfig(expert_model_parallel_size=8, global_batch_size=512)
A_H100_V1 = replace(BASE, num_gpus=256, tensor_model_parallel_size=2,
                    pipeline_model_parallel_size=8, virtual_pipeline_model_parallel_size=4,
                    expert_model_parallel_size=32, moe_a2a_overlap=True)
A_H100_FP8_V1 = A_H100_V1
A_B200_V1 = replace(A_H100_V1, moe_flex_dispatcher_backend="hybridep", moe_a2a_overlap=False,
                    cuda_graph_scope=["attn", "moe_router"])
NOT_A_PRESET = dict(x=1)
'''


def test_presets_follow_replace_and_aliases():
    p = SCRIPT.presets(TOY)
    assert set(p) == {"BASE", "A_H100_V1", "A_H100_FP8_V1", "A_B200_V1"}
    assert p["A_H100_V1"]["expert_model_parallel_size"] == 32
    assert p["A_H100_V1"]["global_batch_size"] == 512  # inherited from BASE
    assert p["A_H100_FP8_V1"] == p["A_H100_V1"]
    assert p["A_B200_V1"]["moe_a2a_overlap"] is False
    assert p["A_B200_V1"]["tensor_model_parallel_size"] == 2
    assert p["A_B200_V1"]["cuda_graph_scope"] == ["attn", "moe_router"]


def test_leaves_domain_by_system():
    row = {"ep": 32, "system": "B200"}
    assert SCRIPT.leaves_domain(row)
    assert not SCRIPT.leaves_domain({**row, "system": "GB200"})
    assert not SCRIPT.leaves_domain({**row, "ep": 8})


def test_no_rule_gives_the_overlap_at_v042():
    mirror_source(SCRIPT.REPO, "v0.4.2",
                  "scripts/performance/configs/deepseek/deepseek_workload_base_configs.py")
    rows = {r["name"]: r for r in SCRIPT.moe_presets("v0.4.2")}
    dsv3 = rows["DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2"]  # the public B200 row's recipe
    assert (dsv3["pp"], dsv3["vp"], dsv3["ep"], dsv3["flex"], dsv3["overlap"]) == \
        (8, 2, 32, "deepep", True)
    assert rows["DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1"]["overlap"] is False  # EP 64 over nodes
    for label, rule in SCRIPT.RULES.items():
        wrong = [n for n, r in rows.items() if rule(r) != r["overlap"]]
        assert wrong, f"rule {label!r} holds on every preset"


@pytest.mark.parametrize("tag", ["v0.2.0"])
def test_v020_qwen3_b200_overlaps_inside_the_board(tag):
    mirror_source(SCRIPT.REPO, tag, "scripts/performance/configs/qwen3/workload_base_configs.py")
    rows = {r["name"]: r for r in SCRIPT.moe_presets(tag)}
    r = rows["QWEN3_235B_A22B_B200_FP8_CS_BASE_CONFIG"]
    assert r["ep"] == 8 and r["overlap"] and not SCRIPT.leaves_domain(r)
