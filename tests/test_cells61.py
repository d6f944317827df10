"""Rows state what their runs did (61st session, cells61).

- ``overlap_param_gather``: the parameter all-gather overlapped without the gradient reduction
  (Megatron-Bridge@v0.1.0rc3 scripts/performance/run_script.py L94-95 turns overlap_grad_reduce
  off for DeepSeek-V3 on H100, training/comm_overlap.py L542-545 keeps overlap_param_gather at
  DP > 1; Megatron-core core_v0.14.0 distributed_data_parallel.py L66-68: one bucket per buffer
  then, the gather's overlap on its own switch).
- Automodel 0.1 - 0.4 lock torch 2.8 / 2.9, whose interleaved schedule (PipelineScheduleMulti)
  waits each time step's batched exchange: no pipeline overlap (automodel.yaml ``p2p_overlap``);
  a row on a framework with no profile is not told to list its fallback's defaults.
- ``nvls`` 0 where the dgxc-benchmarking launch set NCCL_NVLS_ENABLE=0 (benchmarks/nvls_cells.py).
"""

from __future__ import annotations

import csv
import sys
import warnings
from pathlib import Path

import pytest
from helpers import overlaps
from helpers_files import mirror_git

from trainsim.catalog.frameworks import framework_profile
from trainsim.errors import ConfigError
from trainsim.validate.row_settings import omitted_defaults, training_base
from trainsim.validate.training import predict_training_row, row_config

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import nvls_cells

PUBLIC = ROOT.parent / "shared" / "validation" / "training_public.csv"
ROW = {"id": "r", "model": "llama3-8b", "gpu": "h100-sxm-80gb", "num_gpus": "32",
       "gpus_per_node": "8", "tp": "2", "pp": "2", "vpp": "2", "sequence_parallel": "1",
       "recompute": "none", "distributed_optimizer": "1", "global_batch_size": "64",
       "micro_batch_size": "1", "seq_length": "4096", "dtype": "bf16",
       "framework": "megatron-core", "framework_version": "0.14", "attention": "cudnn",
       "grad_reduce_dtype": "bf16", "measured_iteration_s": "1"}


def _predict(row: dict[str, str]):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = predict_training_row(row, compute_db=None)
    return result, [str(w.message) for w in caught]


def test_overlap_param_gather_alone_turns_on_the_gather_only():
    # before: "unknown option 'overlap_param_gather'"
    assert overlaps(ROW, options="pp_overlap;overlap_param_gather") == (False, True, True, False)
    assert overlaps(ROW, options="pp_overlap;dp_overlap;overlap_param_gather") == \
        (True, True, True, False)
    assert overlaps(ROW, options="pp_overlap;dp_overlap") == (True, True, True, False)


def test_the_gather_alone_is_priced_between_none_and_both():
    times = [_predict({**ROW, "options": o})[0].predicted
             for o in ("pp_overlap", "pp_overlap;overlap_param_gather", "pp_overlap;dp_overlap")]
    assert times[0] > times[1] > times[2]
    cfg = row_config({**ROW, "options": "pp_overlap;overlap_param_gather"})
    assert cfg.parallel.overlap_param_gather and not cfg.parallel.overlap_grad_reduce


def test_a_cell_stating_the_gather_half_leaves_out_no_dp_overlap():
    row = {**ROW, "framework": "megatron-bridge", "framework_version": "25.09"}
    assert "dp_overlap" in omitted_defaults({**row, "options": "pp_overlap"})
    assert omitted_defaults({**row, "options": "pp_overlap;overlap_param_gather"}) == set()
    _, told = _predict({**row, "options": "pp_overlap;overlap_param_gather"})
    assert not [m for m in told if "leaves out" in m]


@pytest.mark.skipif(not PUBLIC.exists(), reason="../shared/validation not checked out")
def test_the_bridge_2509_deepseek_erratum_states_the_gather(tmp_path):
    from trainsim.validate.errata import corrected_file

    fixed, _ = corrected_file(PUBLIC, ROOT / "benchmarks" / "training_errata.csv", tmp_path)
    with open(fixed, newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "bridge2509-deepseek-v3-1024")
    assert row["options"] == "ep_overlap;pp_overlap;overlap_param_gather"
    # grad reduce off (run_script.py L94-95), gather and p2p on, no TP overlap
    assert overlaps(row) == (False, True, True, False)
    assert omitted_defaults(row) == set()


def test_automodel_before_0_5_has_no_pipeline_overlap():
    assert framework_profile("automodel", "0.1").supports("p2p_overlap") is False
    assert framework_profile("automodel", "0.4").supports("p2p_overlap") is False
    assert framework_profile("automodel", "0.5").supports("p2p_overlap") is None
    row = {**ROW, "num_gpus": "16", "tp": "1", "recompute": "full", "zero_stage": "3",
           "distributed_optimizer": "", "framework": "automodel", "framework_version": "0.1",
           "global_batch_size": "32"}
    refused, _ = _predict({**row, "options": "pp_overlap"})
    assert refused.predicted is None and "no p2p overlap" in refused.error
    later, _ = _predict({**row, "options": "pp_overlap", "framework_version": "0.5"})
    assert later.error is None


def test_a_row_read_by_a_fallback_is_not_told_to_list_the_fallbacks_defaults():
    # the blind Automodel DeepSeek-V3 rows: cell 'fake_balanced_gate', megatron-core's
    # pp_overlap left out; the row still runs without it (its cell is its whole list)
    row = {**ROW, "num_gpus": "16", "tp": "1", "recompute": "full", "zero_stage": "3",
           "distributed_optimizer": "", "framework": "otherfw", "framework_version": "0.1",
           "global_batch_size": "32", "options": "fake_balanced_gate"}
    result, told = _predict(row)
    assert result.chosen["framework"] == "megatron-core"
    assert not [m for m in told if "leaves out" in m]
    cfg = row_config(row, result.chosen)
    assert not cfg.parallel.overlap_p2p_comm
    # named, the same cell on megatron-core is still told
    _, named = _predict({**row, "framework": "megatron-core", "framework_version": "0.18"})
    assert [m for m in named if "leaves out pp_overlap" in m]


NVLS_FILES = ("dgxc", "dgxc2502", "dgxc_grok1", "dgxc2505", "dgxc_grok1_2505", "nemotronh",
              "dgxc_llama31_2505", "dgxc_llama4")


@pytest.mark.parametrize("name", NVLS_FILES)
def test_each_dgxc_row_states_its_launchs_nvls(name):
    with open(ROOT / "benchmarks" / f"training_{name}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        src = nvls_cells.source_of(r)
        assert src is not None, r["id"]
        assert r["nvls"] == "0" and nvls_cells.clause(src[0]) in r["note"], r["id"]
    raw, _ = training_base(rows[0])
    assert raw["cluster"]["nvls"] == "0"


def test_nvls_off_moves_the_gb200_rows_only():
    """On H100 the data-parallel groups hold one GPU a node: no NVLS collective to lose."""
    with open(ROOT / "benchmarks" / "training_dgxc_llama4.csv", newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    gb200 = rows["dgxc2505-llama4-maverick-bf16-gb200-128"]
    off, on = (_predict({**gb200, "nvls": v})[0].predicted for v in ("0", ""))
    assert off > on


def test_nvls_lines_are_the_mirrors():
    for repo in ("NVIDIA+dgxc-benchmarking", "NVIDIA+NeMo"):
        if not (mirror_git(repo) / "HEAD").exists():
            pytest.skip(f"no {repo.replace('+', '/')} mirror")
    assert nvls_cells.check() == []


def test_an_unread_launch_gets_no_cell():
    row = {"id": "dgxc2411-paxml-gpt-5b-8", "note": "n", "source": ""}
    assert nvls_cells.source_of(row) is None and nvls_cells.stated(row)["nvls"] == ""
    with pytest.raises(ConfigError):
        training_base({**ROW, "options": "overlap_param_gathr"})
