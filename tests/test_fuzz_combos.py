"""Fifth robustness sweep (benchmarks/fuzz_combos.py, 19th session): random valid runs with
every dimension drawn at once, and the command lines over them. The classes it found, each
checked failing before its fix, then a fast seeded sample of the sweep (the long run behind
``-m slow``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from trainsim.errors import ConfigError
from trainsim.search import SearchSpace, search
from trainsim.search.cli import build_base
from trainsim.search.space import Candidate, MemoryKey

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fuzz_combos.py"
SPACE = SearchSpace(recompute=("none",), max_micro_batch=1, tp=(1, 2), pp=(1, 2),
                    sequence_parallel=(True,), cp=(1,))


def _sweep():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("fuzz_combos", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _base(*sets: str):
    return build_base("llama3-8b", "h100-sxm-80gb", 16, 64, 2048, 8, 400.0, "bf16", sets)


# ------------------------------------------------------------- search: --set of a switch

@pytest.mark.parametrize("switch", ["overlap_grad_reduce", "overlap_param_gather",
                                    "tp_comm_overlap", "overlap_p2p_comm"])
def test_an_overlap_switch_set_off_stays_off_in_every_candidate(switch):
    """search --set parallel.overlap_grad_reduce=false: every candidate runs it off (the
    search tried it on and off, and ranked the ones with it on, reporting it as fixed)."""
    base = _base(f"parallel.{switch}=false")
    space = SPACE.fixed_by(base.fixed)
    key = MemoryKey(16, 2, 2, 1, 1, 1, "none", True, 1, 1, 1, "alltoall", "")
    variants = space.variants(key)
    assert variants and all(getattr(c, switch) is False for c in variants)
    assert len(variants) == len(SPACE.variants(key)) // 2  # the other switches still vary
    r = search(base, [16], space, top_k=3, cache=None)
    assert r.top and all(not getattr(x.evaluation.candidate, switch) for x in r.top)
    assert all(not getattr(x.evaluation.candidate.to_config(base).parallel, switch)
               for x in r.top)


def test_an_overlap_switch_set_on_holds_where_it_applies_under_overlap_off():
    """--set parallel.overlap_grad_reduce=true with --overlap off: on wherever data-parallel
    reduction exists (dp > 1), the others off; at dp 1 it cannot matter and stays off."""
    base = _base("parallel.overlap_grad_reduce=true")
    space = SearchSpace(overlap="off").fixed_by(base.fixed)
    dp8 = space.variants(MemoryKey(16, 2, 1, 1, 1, 1, "none", True, 1, 1, 1, "alltoall", ""))
    assert [(c.overlap_grad_reduce, c.overlap_param_gather, c.tp_comm_overlap) for c in dp8] \
        == [(True, False, False)]
    dp1 = space.variants(MemoryKey(16, 8, 2, 1, 1, 1, "none", True, 1, 1, 1, "alltoall", ""))
    assert [c.overlap_grad_reduce for c in dp1] == [False]


def test_no_switch_set_keeps_the_lazy_families():
    """Without a pinned switch the space is what it was (every switch varied)."""
    assert _base().fixed == ()
    assert SPACE.fixed_by(()).pinned == ()
    key = MemoryKey(16, 2, 2, 1, 1, 1, "none", True, 1, 1, 1, "alltoall", "")
    assert len(SPACE.variants(key)) == 16  # grad, param, tp, p2p on and off
    assert Candidate(key) in SPACE.variants(key)


# ------------------------------------------------- search: --set checked as each candidate

@pytest.mark.parametrize("schedule", ["zb_v", "dualpipe_v", "dualpipe", "interleaved_1f1b",
                                      "interleaved_zb"])
def test_a_fixed_pipeline_schedule_is_checked_with_a_pipeline(schedule):
    """--set parallel.pipeline_schedule=zb_v was refused as 'vpp > 1 needs pp > 1' (it was
    checked at pp 1, whatever --pp said); now the schedule is searched on pipelined splits."""
    base = _base(f"parallel.pipeline_schedule={schedule}")
    assert dict(base.fixed) == {"pipeline_schedule": schedule}
    space = SearchSpace(pp=(2,), tp=(1,), recompute=("none",), max_micro_batch=1,
                        overlap="off").fixed_by(base.fixed)
    keys = list(space.memory_keys(base, 16))
    want = "" if schedule == "interleaved_1f1b" else schedule
    assert keys and {k.schedule for k in keys} == {want}


@pytest.mark.parametrize("schedule, chunks", [("zb_h1", {1}), ("1f1b", {1}),
                                               ("interleaved_1f1b", {2, 4, 8}), ("zb_v", {2})])
def test_a_fixed_schedule_is_searched_on_pipelines_only_with_its_chunks(schedule, chunks):
    """A fixed schedule was dropped silently on pp-1 candidates (and 1f1b ran interleaved
    at vpp > 1); now every candidate pipelines, with the chunks the schedule runs."""
    base = _base(f"parallel.pipeline_schedule={schedule}")
    space = SearchSpace(tp=(1,), recompute=("none",), max_micro_batch=1,
                        overlap="off").fixed_by(base.fixed)
    keys = list(space.memory_keys(base, 16))
    assert keys and all(k.pp > 1 for k in keys) and {k.vpp for k in keys} == chunks


def test_a_fixed_schedule_with_only_pp_1_is_refused():
    base = _base("parallel.pipeline_schedule=zb_h1")
    with pytest.raises(ConfigError, match="no pipeline runs it"):
        SearchSpace(pp=(1,)).fixed_by(base.fixed)


def test_a_fixed_vpp_is_checked_with_a_pipeline():
    """--set parallel.vpp=2 was refused as 'vpp > 1 needs pp > 1' (checked at pp 1)."""
    base = _base("parallel.vpp=2")
    keys = list(SearchSpace(tp=(1,), recompute=("none",), max_micro_batch=1)
                .fixed_by(base.fixed).memory_keys(base, 16))
    assert keys and {k.vpp for k in keys} == {2} and all(k.pp > 1 for k in keys)


def test_a_fixed_engine_is_checked_at_its_own_least_zero_stage():
    """--set parallel.data_parallel_impl=fsdp2 was refused as 'zero_stage=0 under fsdp2' (no
    stage given, ParallelConfig's 0 checked); now the search tries FSDP's stages 2 and 3."""
    base = _base("parallel.data_parallel_impl=fsdp2")
    assert dict(base.fixed) == {"data_parallel_impl": "fsdp2"}
    keys = list(SearchSpace(tp=(1,), pp=(1,), recompute=("none",), max_micro_batch=1)
                .fixed_by(base.fixed).memory_keys(base, 16))
    assert {k.zero for k in keys} == {2, 3}


def test_sequence_parallelism_set_on_stays_on():
    """--set parallel.sequence_parallel=true was checked at tp 1, read back off, and fixed
    off for every candidate (the reverse of what was asked); it holds where tp > 1."""
    base = _base("parallel.sequence_parallel=true")
    assert dict(base.fixed) == {"sequence_parallel": True}
    keys = list(SearchSpace(tp=(1, 2), pp=(1,), recompute=("none",), max_micro_batch=1)
                .fixed_by(base.fixed).memory_keys(base, 16))
    assert {k.sequence_parallel for k in keys if k.tp == 2} == {True}


def test_a_first_last_layout_is_fixed_as_its_two_fields():
    """--set parallel.pipeline_model_parallel_layout=first:14,last:18 was fixed as None (the
    check read it into decoder_first/last and only the layout key was kept)."""
    base = _base("parallel.pipeline_model_parallel_layout=first:14,last:18")
    assert dict(base.fixed) == {"decoder_first_pipeline_num_layers": 14,
                                "decoder_last_pipeline_num_layers": 18}
    key = MemoryKey(16, 1, 2, 1, 1, 1, "none", False, 1, 1, 1, "alltoall", "")
    assert Candidate(key).to_config(base).stage_layer_counts == (14, 18)


def test_a_fixed_schedule_still_refuses_what_no_pipeline_runs():
    """The check still refuses a schedule with a fixed size it cannot run on."""
    with pytest.raises(ConfigError, match="dualpipe needs an even"):
        _base("parallel.pipeline_schedule=dualpipe", "parallel.pp=3")


# ------------------------------------------------------------------ simulate: tiny buckets

def test_a_one_element_bucket_size_makes_one_bucket_per_tensor():
    """ddp_bucket_size: 1 with overlap_grad_reduce built a list of one bucket's kernels per
    parameter element (MemoryError after minutes, fuzz_combos seed 41); Megatron closes a
    bucket only at a tensor's end, so a chunk has at most one bucket per tensor."""
    import time

    from trainsim.catalog import run_config_from_dict
    from trainsim.model.counts import layer_tensors
    from trainsim.simulator import simulate
    from trainsim.workload.ddp_buckets import ddp_buckets

    cfg = run_config_from_dict({
        "model": {"hidden_size": 1536, "num_layers": 2, "num_attention_heads": 16,
                  "vocab_size": 128256},
        "parallel": {"overlap_grad_reduce": True, "distributed_optimizer": True,
                     "ddp_bucket_size": 1},
        "training": {"global_batch_size": 64, "seq_length": 1024,
                     "framework": "megatron-core", "framework_version": "0.12"},  # its NaN check
        "cluster": {"gpu": "a100-sxm-80gb", "num_gpus": 64, "gpus_per_node": 8,
                    "compute_db": None}})
    tensors = len(layer_tensors(cfg.model, 0)) + len(layer_tensors(cfg.model, 1))
    # + the word and the learned position embedding, the final LayerNorm's weight and bias
    # (tied: the output layer is the embedding)
    assert ddp_buckets(cfg, range(2), True, True) == tensors + 4
    start = time.perf_counter()
    r = simulate(cfg)
    assert time.perf_counter() - start < 20 and r.iteration_time_s > 0


# ---------------------------------------------------------------------------------- sweep

@pytest.mark.parametrize("varies, sets, match", [
    (["parallel.tp=1,2"], ["parallel.tp=4"], "--set parallel.tp: --vary varies"),
    (["parallel.tp=1,2"], ["parallel.tensor_model_parallel_size=4"], "--vary varies"),
    (["parallel.tp=1,2", "parallel.tensor_model_parallel_size=4,8"], [], "varied twice"),
])
def test_a_sweep_refuses_a_field_given_twice(varies, sets, match):
    """sweep --vary parallel.tp=1,2 --set parallel.tp=4 overwrote the --set at every point
    (and tp with tensor_model_parallel_size, the same field, were both taken)."""
    from trainsim.search.whatif import Vary, sweep

    raw = {"model": "llama3-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8}}
    with pytest.raises(ConfigError, match=match):
        sweep(raw, [Vary.parse(v) for v in varies], sets)


# --------------------------------------------------------------------------------- export

MLA_RUN = """model: {preset: deepseek-v3, num_layers: 8}
parallel: {tp: 1, pp: 2, ep: 4, vpp: 2, pipeline_schedule: dualpipe_v,
           moe_token_dispatcher_type: deepep}
training: {global_batch_size: 32, seq_length: 1024, dtype: fp8, fp8_recipe: blockwise}
cluster: {gpu: h800-sxm-80gb, num_gpus: 16, gpus_per_node: 8, compute_db: null}
"""


@pytest.fixture
def mla_run(tmp_path):
    path = tmp_path / "mla.yaml"
    path.write_text(MLA_RUN)
    return path


def test_an_mla_run_exports_without_a_hugging_face_config(mla_run, tmp_path):
    """export of an MLA run config (examples/deepseek-v3-h800.yaml too) was refused: 'only
    Llama-, Mixtral- and GPT-2-style models are written as Hugging Face configs', a file only
    --captured reads."""
    from helpers import cli

    res = cli("export", str(mla_run), "--simai", str(tmp_path / "w.txt"),
              "--chakra", str(tmp_path / "et"), "--ranks", "0,15")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "w.txt").exists() and (tmp_path / "et.15.et").exists()
    res = cli("export", str(mla_run), "--simai", str(tmp_path / "w.txt"), "--captured")
    assert "Hugging Face configs" in one_line(res)


@pytest.mark.parametrize("args, out", [
    (["--ranks", "0,0"], "chakra: 1 traces"),
    (["--ranks", ""], "error: --ranks '': an empty value"),
])
def test_export_ranks_once_each_and_never_empty(mla_run, tmp_path, args, out):
    """--ranks 0,0 wrote rank 0 twice and counted two traces; --ranks '' exported all 16."""
    from helpers import cli

    res = cli("export", str(mla_run), "--chakra", str(tmp_path / "et"), *args)
    assert out in res.output


@pytest.mark.parametrize("flag", [["--ranks", "0"], ["--per-kernel"]])
def test_chakra_only_options_without_chakra_are_refused(mla_run, tmp_path, flag):
    """--ranks and --per-kernel with --simai alone were silently ignored."""
    from helpers import cli

    res = cli("export", str(mla_run), "--simai", str(tmp_path / "w.txt"), *flag)
    assert "shapes the Chakra traces only" in one_line(res)


def one_line(res) -> str:
    from helpers import one_error_line

    return one_error_line(res)


# --------------------------------------------------------------------- profile without torch

def test_profile_on_cpu_without_torch_does_not_point_at_cpu(monkeypatch):
    """profile --device cpu without torch said 'use --device cpu to dry-run'; it names the
    missing package instead."""
    from trainsim.profile.run import ProfileOptions, run_profile
    from trainsim.profile.schema import ProfileError

    monkeypatch.setitem(sys.modules, "torch", None)
    opts = ProfileOptions(gpu="h100-sxm-80gb", models=("llama3-8b",), tps=(1,), seqs=(512,),
                          cps=(1,), micro_batch_size=1, device="cpu", quick=True)
    with pytest.raises(ProfileError) as err:
        run_profile(opts)
    assert "dry-run" not in str(err.value) and "needs PyTorch" in str(err.value)


# ------------------------------------------------------------------------ the sweep itself

def test_a_seeded_sample_of_whole_runs_holds_every_invariant():
    """40 drawn runs (dense, MoE, MLA; every parallel dimension, schedule, recompute, ZeRO
    engine, fp8 recipe, framework and GPU at once): each a sane, deterministic result whose
    breakdown sums to its iteration time, or one clean error line; at least three in four
    simulated, not refused (34 of 40 on 2026-11-27; 80 runs up to the 36th session, 4,500
    behind ``-m slow``)."""
    mod = _sweep()
    out = mod.sweep(seed=11, n=40)
    counts = out.pop("_counts")[0]
    assert not out, {k: v[:1] for k, v in out.items()}
    assert counts["handled"] == 40 and mod.REFUSALS["(simulated)"] >= 30


def test_each_sweep_counts_its_own_refusals():
    """REFUSALS lives in fuzz_combos_draw, which stays in sys.modules across ``_sweep()``
    reloads: a sweep starts its tally afresh, so a count cannot pass on earlier sweeps'."""
    mod = _sweep()
    mod.sweep(seed=11, n=2)
    mod = _sweep()
    mod.sweep(seed=11, n=2)
    assert 1 <= mod.REFUSALS["(simulated)"] <= 2


def test_a_seeded_sample_of_command_lines_is_handled():
    """simulate / export / sweep / search / validate over a few drawn runs: exit 0 with
    parseable JSON, or one error line."""
    mod = _sweep()
    assert not mod.run_cli(seed=5, n=3, only=set())


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_the_long_sweep_finds_nothing_slow(seed):
    mod = _sweep()
    out = mod.sweep(seed=100 + seed, n=1500)
    out.pop("_counts")
    out.update(mod.run_cli(seed=100 + seed, n=60, only=set()))
    assert not out, {k: v[:1] for k, v in out.items()}
