"""The search over mixture-of-experts dimensions (issue 20): EP, expert TP, the dispatcher, the
pipeline schedule, and fixed values given with --set, honoured and reported."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from trainsim.cli import main
from trainsim.errors import ConfigError
from trainsim.search import SearchSpace, evaluate, search
from trainsim.search.cli import build_base
from trainsim.search.cli_inputs import search_space as _space
from trainsim.search.evaluation import Bounds, lower_bound_s

TINY_MOE = {"name": "tiny-moe", "hidden_size": 1024, "num_layers": 7, "num_attention_heads": 16,
            "num_kv_heads": 4, "vocab_size": 32000, "activation": "swiglu",
            "position_embedding": "rope", "normalization": "rmsnorm", "tied_embeddings": False,
            "add_bias_linear": False, "num_experts": 16, "moe_router_topk": 2,
            "moe_ffn_hidden_size": 1024}
SPACE = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1, 2), pp=(1, 2),
                    sequence_parallel=(True,))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("moe") / "tiny-moe.json"
    path.write_text(json.dumps({"model": TINY_MOE}))
    return str(path)


@pytest.fixture
def tiny_base(model_file):
    def make(overrides=()):
        return build_base(model_file, "h100-sxm-80gb", 32, 64, 1024, 8, 400.0, "bf16", overrides)
    return make


def test_moe_space_varies_ep_expert_tp_dispatcher_and_schedule(tiny_base):
    """A MoE model's candidates differ in EP, expert TP, dispatcher and pipeline schedule, and
    its 7 layers split over 2 stages by a balanced layout."""
    base = tiny_base()
    keys = list(SPACE.memory_keys(base, 32))
    assert {k.ep for k in keys} >= {1, 2, 4, 8, 16}
    assert {k.etp for k in keys} == {1, 2}
    assert {k.dispatcher for k in keys} == {"alltoall", "deepep"}
    assert {k.schedule for k in keys} == {"", "dualpipe"}
    cfg = next(k for k in keys if k.pp == 2)
    from trainsim.search.space import Candidate
    assert Candidate(cfg).to_config(base).parallel.pipeline_model_parallel_layout == "balanced"


def test_fixed_parallel_values_are_honoured_and_reported(tiny_base):
    """--set parallel.ep=8 narrows EP to 8 in every ranked configuration and is reported;
    a fixed field that is no dimension (fp8 dispatch) reaches every candidate's config."""
    base = tiny_base(("parallel.ep=8", "parallel.moe_dispatch_fp8=true"))
    assert dict(base.fixed) == {"expert_model_parallel_size": 8, "moe_dispatch_fp8": True}
    space = SPACE.fixed_by(base.fixed)
    r = search(base, [32], space, top_k=3, cache=None)
    assert r.top and all(x.evaluation.candidate.mem.ep == 8 for x in r.top)
    assert r.to_dict()["fixed"] == {"expert_model_parallel_size": 8, "moe_dispatch_fp8": True}
    assert r.top[0].evaluation.candidate.to_config(base).parallel.moe_dispatch_fp8


def test_fixed_value_conflicting_with_a_search_option_is_an_error(tiny_base):
    """--set parallel.tp=2 with --tp 4 is refused, never silently resolved."""
    base = tiny_base(("parallel.tp=2",))
    with pytest.raises(ConfigError, match="fixed"):
        _space("4", None, None, 8, 8, "none", None, "search", base=base)


def test_unknown_fixed_parallel_field_is_an_error(tiny_base):
    """A misspelt --set parallel field is an error naming it (it was dropped before)."""
    with pytest.raises(ConfigError, match="expert_paralel"):
        tiny_base(("parallel.expert_paralel=8",))


def test_reference_field_the_search_does_not_carry_is_an_error(tiny_base):
    """--reference with a field no candidate carries (fp8 dispatch) is refused with the fix
    (--set it for every candidate), not dropped; once fixed with --set it is accepted."""
    from trainsim.search.cli import parse_reference
    ref = "tp=1,pp=2,ep=8,moe_dispatch_fp8=1,mb=1"
    with pytest.raises(ConfigError, match="moe_dispatch_fp8.*--set parallel"):
        parse_reference(ref, tiny_base(), 32)
    base = tiny_base(("parallel.moe_dispatch_fp8=true",))
    assert parse_reference(ref, base, 32).to_config(base).parallel.moe_dispatch_fp8


def test_bounds_stay_below_simulated_moe_and_schedule_candidates(tiny_base):
    """The lower bounds hold for EP, dispatcher and schedule candidates too."""
    base = tiny_base()
    keys = list(SPACE.memory_keys(base, 32))
    rng = random.Random(1)
    bounds = Bounds(base)
    for k in rng.sample(keys, 12):
        c = rng.choice(SPACE.variants(k))
        t = evaluate(c, base).iteration_time_s
        assert lower_bound_s(k, base) < t and bounds.refined(c) < t


def test_search_cli_reports_fixed_and_moe_fields(model_file):
    """`trainsim search --set parallel.ep=4 --format json` reports the fixed field and every
    configuration carries its EP, dispatcher and schedule."""
    r = CliRunner().invoke(main, ["search", model_file, "--gpus", "16", "--global-batch", "32",
                                  "--seq", "1024", "--tp", "1,2", "--pp", "1,2",
                                  "--recompute", "none", "--max-micro-batch", "1",
                                  "--set", "parallel.ep=4", "--format", "json", "--top", "2"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["fixed"] == {"expert_model_parallel_size": 4}
    assert all(x["config"]["ep"] == 4 and "pipeline_schedule" in x["config"] for x in d["top"])


def test_ranking_and_front_keep_only_configurations_that_fit():
    """The memory check of a group runs with its overlap switches off; the expert all-to-all
    overlap keeps one more forward in flight, so a sibling can exceed the GPU's memory: it is
    simulated but never ranked nor on the Pareto front (Mixtral-8x22B, TP 2 x PP 4, EP 8; at
    4,672 tokens the overlapped siblings need 80.0 GiB, the others 74.8-79.2, on the H100's
    79.65 GiB)."""
    base = build_base("mixtral-8x22b", "h100-sxm-80gb", 128, 512, 4672, 8, 400.0, "bf16")
    space = _space("2", "4", "1", 7, 1, "none", "1", "search", ep_="8", etp_="2",
                   dispatcher="deepep", base=base)
    r = search(base, [128], space, top_k=3, cache=None)
    assert any(not e.fits for e in r.evaluated)
    assert r.top and all(x.evaluation.fits for x in r.top)
    assert r.pareto and all(e.fits for e in r.pareto)
