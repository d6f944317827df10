"""edge48: a search candidate whose full simulation (the steady-state shortcut's fallback) is over
the task limit is skipped and counted, never ending the search; gemma3n refused as not modelled
naming its structures; the flow backend places a group that straddles nodes unevenly."""

from __future__ import annotations

import json
import sys
import warnings

import pytest

from trainsim import steady_state
from trainsim.errors import ConfigError
from trainsim.limits import simulation_tasks
from trainsim.search import Candidate, SearchSpace, search
from trainsim.search.cli_inputs import nothing_found
from trainsim.search.evaluation import Skipped, evaluate_runnable
from trainsim.search.executors import SerialExecutor

sys.path.insert(0, "tests")
from helpers import TINY_MODEL, make_base

SPACE = {"tp": (1,), "pp": (1,), "cp": (1,), "recompute": ("none",), "zero": (0,),
         "overlap": "off"}


def _base(monkeypatch):
    # 2 GPUs, PP1 DP2: 2,048 micro-batches at micro-batch 1, 1,024 at 2; the shortcut's
    # truncated runs are a few hundred tasks. Here their period is never proven (before ss49
    # a one-stage pipeline's never was, the last backward's gradient reduction in it), so the
    # simulator falls back to the full iteration
    monkeypatch.setattr(steady_state, "_extrapolate", lambda *args: (None, "", 0))
    return make_base(TINY_MODEL, gpus=2, batch=4096, seq=64)


def _run(base, micro_batch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return search(base, [2], SearchSpace(micro_batch=micro_batch, **SPACE), top_k=3,
                      executor=SerialExecutor(), cache=None)


def test_a_candidate_over_the_task_limit_in_its_fallback_is_skipped_not_fatal(monkeypatch):
    base = _base(monkeypatch)
    free = _run(base, (1, 2))
    assert {e.candidate.mem.micro_batch for e in free.evaluated} == {1, 2}
    one = next(e.candidate for e in free.evaluated if e.candidate.mem.micro_batch == 1)
    cfg = one.to_config(base)
    short, full = steady_state.simulated_tasks(cfg), simulation_tasks(cfg)
    assert short < full  # the up-front check passes it ...
    two = next(e.candidate for e in free.evaluated if e.candidate.mem.micro_batch == 2)
    assert simulation_tasks(two.to_config(base)) < (short + full) / 2 < full
    monkeypatch.setenv("TRAINSIM_MAX_TASKS", repr((short + full) / 2))
    skipped = evaluate_runnable(one, base)  # ... the full simulation it falls back to does not
    assert isinstance(skipped, Skipped) and "simulated in full" in skipped.why
    r = _run(base, (1, 2))  # before: the search ended with that WorkLimitError
    assert [e.candidate.mem.micro_batch for e in r.evaluated] == [2]
    assert r.best is not None and r.best.candidate.mem.micro_batch == 2
    assert r.stats.memory_pruned == free.stats.memory_pruned + 1
    assert r.stats.simulated == free.stats.simulated - 1
    assert r.over_limit.startswith(one.label()) and "over the limit" in r.over_limit


def test_a_search_whose_every_candidate_is_over_the_limit_says_so(monkeypatch):
    base = _base(monkeypatch)
    one = Candidate(_run(base, (1,)).evaluated[0].candidate.mem)
    cfg = one.to_config(base)
    monkeypatch.setenv("TRAINSIM_MAX_TASKS",
                       repr((steady_state.simulated_tasks(cfg) + simulation_tasks(cfg)) / 2))
    r = _run(base, (1,))
    assert r.best is None and r.stats.simulated == 0
    said = str(nothing_found(r))
    assert "within the work limits" in said and "TRAINSIM_MAX_TASKS" in said


GEMMA3N_TEXT = {"architectures": ["Gemma3nForCausalLM"], "model_type": "gemma3n_text",
                "hidden_size": 512, "intermediate_size": [2048, 2048, 4096, 4096],
                "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 128,
                "num_hidden_layers": 4, "vocab_size": 4096, "rms_norm_eps": 1e-6,
                "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 512,
                "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
                "altup_num_inputs": 4, "laurel_rank": 64, "hidden_size_per_layer_input": 256,
                "num_kv_shared_layers": 2, "activation_sparsity_pattern": [0.95, 0.95, 0, 0]}


def _read(tmp_path, cfg):
    from trainsim.catalog.hf_config import model_from_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model_from_hf_config(path)


def test_gemma3n_is_refused_as_not_modelled_naming_its_structures(tmp_path):
    with pytest.raises(ConfigError) as refused:
        _read(tmp_path, GEMMA3N_TEXT)
    said = str(refused.value)
    assert "\n" not in said and "must be an integer" not in said
    for part in ("per-layer MLP widths (intermediate_size: 4 entries, 2,048 to 4,096)",
                 "activation sparsity", "AltUp (4 copies", "LAuReL (a rank-64",
                 "per-layer inputs (a 256-wide", "KV sharing (the last 2 layers",
                 "not modelled by trainsim"):
        assert part in said
    # the multimodal file reads its text_config and is refused the same way
    with pytest.raises(ConfigError, match=r"text_config: per-layer MLP widths"):
        _read(tmp_path, {"architectures": ["Gemma3nForConditionalGeneration"],
                         "model_type": "gemma3n", "text_config": GEMMA3N_TEXT})


def test_one_width_with_altup_is_refused_and_the_structures_off_read(tmp_path):
    one = {**GEMMA3N_TEXT, "intermediate_size": 2048}  # no list: AltUp etc. still refused
    with pytest.raises(ConfigError, match=r"AltUp .*LAuReL") as refused:
        _read(tmp_path, one)
    assert "per-layer MLP widths" not in str(refused.value)
    off = {**one, "altup_num_inputs": None, "laurel_rank": 0, "hidden_size_per_layer_input": 0,
           "num_kv_shared_layers": 0, "activation_sparsity_pattern": [0.0] * 4,
           "model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"]}
    assert _read(tmp_path, off).ffn_hidden_size == 2048


def test_the_flow_backend_places_a_group_straddling_nodes_unevenly_by_its_real_ranks():
    from dataclasses import replace

    from test_robust48 import FLOW_UNEVEN

    from trainsim.catalog import run_config_from_dict
    from trainsim.collectives.placement import placed_span, worst_group
    from trainsim.network.flow import FlowNetwork
    from trainsim.network.topology import from_cluster
    from trainsim.simulator import simulate

    cfg = run_config_from_dict(FLOW_UNEVEN)  # 6 GPUs of 3 a node, EP 2: expert-DP {0, 2, 4}
    net = FlowNetwork(from_cluster(cfg.cluster))
    span = net.span(3, 2)
    assert (span.size, span.per_node, span.nodes) == (3, 1, 2)  # 2 + 1, not 3 nodes x 1
    assert span == replace(placed_span(3, 2, (3, 3)), ranks=(0, 2, 4))  # robust49: ranks kept
    assert worst_group(3, 2, (3, 3)) == (0, 2, 4)
    assert net.collective("all_reduce", 1e6, span).time_s > 0
    assert net.span(2, 1) == net.span(2, 1) and net.span(3, 1).nodes == 1  # whole nodes as before
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flow = simulate(cfg)  # robust48: refused, naming the cause
        analytical = simulate(run_config_from_dict(
            {**FLOW_UNEVEN, "cluster": {**FLOW_UNEVEN["cluster"], "network_backend": "analytical"}}))
    assert flow.exposed_comm["dp"] > 0
    assert abs(flow.iteration_time_s / analytical.iteration_time_s - 1) < 0.05


def test_placed_span_is_unchanged_by_its_worst_group_helper():
    """placed_span now reads its group from worst_group: the spans main's placed_span gave
    (594261c5; identical on 4,368 size x stride x domain cases, benchmarks/RESULTS.md edge48)."""
    from trainsim.collectives.nccl import GroupSpan
    from trainsim.collectives.placement import placed_span, worst_group

    nvl = (72, 72, 72, 40)
    for args, span, ranks in (
            ((3, 2, (3, 3)), GroupSpan(3, 1, uneven_nodes=2), (0, 2, 4)),
            ((8, 1, nvl), GroupSpan(8, 8), (0, 1, 2, 3, 4, 5, 6, 7)),
            ((16, 8, nvl), GroupSpan(16, 2, uneven_nodes=3), None),
            ((4, 2, (4, 4, 4)), GroupSpan(4, 2), (0, 2, 4, 6)),
            ((3, 4, (8, 8, 5)), GroupSpan(3, 1, uneven_nodes=2), None),
            ((2, 1, (3, 3)), GroupSpan(2, 1), (2, 3)),
            ((4, 4, (4, 4, 4)), GroupSpan(4, 4), ())):  # no such group fits: one node
        assert placed_span(*args) == span
        assert ranks is None or worst_group(*args) == ranks
