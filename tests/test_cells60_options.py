"""Options cells read from their runs' sources (60th session, cells60): a stated cell is the run's
whole list (validation README format v2), so a cell that leaves out a default its framework turns
on must be one the source bears out (``benchmarks/options_omitted.py`` READ) or it is open.

- NVIDIA/dgxc-benchmarking@35a9aecc8d nemotron/configure.sh (sourced by nemotron/launch.sh, its
  overrides passed to megatron_gpt_pretraining.py after the yaml): L76-78 'model.overlap_p2p_comm=True
  model.batch_p2p_comm=False' for 340b, L97 'model.ub_tp_comm_overlap=True' for every size, L65
  NVTE_FUSED_ATTN=0 for 340b; nemotron4-340b-synth.yaml's own L151 overlap_p2p_comm False and L172
  ub_tp_comm_overlap False are overridden. The 24.11 340b rows had copied the yaml.
- foundation-model-stack/fms-fsdp@3b1ce15 main_training.py: FSDP1, then torch.compile(model);
  FSDP1 reduce-scatters from its post-backward hook on its own stream (torch
  fsdp/_runtime_utils.py ``_post_backward_hook``): the compile rows list the overlap too."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest
from helpers import overlaps

from trainsim.validate.row_settings import omitted_defaults

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import options_omitted

CHECK_FILES = [p for p in sorted((ROOT / "benchmarks").glob("training_*.csv"))
               if "errata" not in p.name]
PUBLIC = ROOT.parent / "shared" / "validation" / "training_public.csv"


def _rows(name: str) -> dict[str, dict[str, str]]:
    with open(ROOT / "benchmarks" / name, newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def test_no_check_file_row_drops_a_default_its_source_was_not_read_for():
    # a cell copied from a recipe file or a command line again would be listed open here
    listed = options_omitted.omitted(CHECK_FILES)
    assert [r for r in listed if r[1] not in options_omitted.READ] == []
    # and every row the table names as read is still one that leaves a default out
    ids = {r[1] for r in listed}
    assert {i for i in options_omitted.READ if not i.startswith("bridge2509")} <= ids


@pytest.mark.skipif(not PUBLIC.exists(), reason="../shared/validation not checked out")
def test_the_public_row_left_out_is_the_one_read():
    assert [r[1] for r in options_omitted.omitted([PUBLIC])] == ["bridge2509-deepseek-v3-1024"]


def test_a_default_that_cannot_act_is_not_listed(tmp_path):
    # one GPU (benchmarks/training_h200_steps.csv): nothing to reduce, dp_overlap changes nothing
    row = {"id": "one", "model": "llama3.2-1b", "gpu": "h200-sxm-141gb", "num_gpus": "1",
           "tp": "1", "pp": "1", "global_batch_size": "1", "micro_batch_size": "1",
           "seq_length": "4096", "dtype": "bf16", "framework": "pytorch",
           "framework_version": "2.11", "measured_iteration_s": "1", "options": "enable_gqa"}
    assert omitted_defaults(row) == {"dp_overlap"}
    path = tmp_path / "t.csv"
    two = {**row, "id": "two", "num_gpus": "2", "global_batch_size": "2"}
    path.write_text(",".join(row) + "\n" + "\n".join(",".join(r.values()) for r in (row, two))
                    + "\n")
    assert options_omitted.omitted([path]) == [("t.csv", "two", "enable_gqa", "dp_overlap", 2)]


def test_the_24_11_nemotron4_340b_rows_run_configure_sh_overrides():
    rows = _rows("training_dgxc.csv")
    big = [r for i, r in rows.items() if i.startswith("dgxc2411-nemotron4-340b")]
    assert len(big) == 4
    for r in big:
        assert set(r["options"].split(";")) == {"tp_overlap", "pp_overlap", "dp_overlap"}
        assert r["attention"] == "flash2" and "configure.sh L65" in r["note"]
        # grad reduce, param gather, p2p and TP overlap all on, as the 25.04 rows of the model
        assert overlaps(r) == (True, True, True, True)
        assert omitted_defaults(r) == set()
    later = [r for i, r in rows.items() if i.startswith("dgxc2504-nemotron4-340b")]
    assert {r["options"] for r in later} == {big[0]["options"]}


def test_the_fms_compile_rows_keep_fsdps_overlap():
    rows = _rows("training_pytorch.csv")
    comp = [r for i, r in rows.items() if i.startswith("fms2405")]
    assert len(comp) == 8
    assert {r["options"] for r in comp} == {"compile;dp_overlap"}
    assert all(omitted_defaults(r) == set() for r in comp)


def test_the_24_11_and_25_02_fp8_rows_gather_fp8_parameters():
    # dgxc-benchmarking passes fp8_params on every fp8 run of these recipes (nemotron and
    # llama3.1 configure.sh, gpt3_175b_hydra.yaml L221); NeMo all-gathers them as uint8
    for name, prefix in (("training_dgxc.csv", "dgxc2411"), ("training_dgxc2502.csv", "dgxc2502")):
        rows = [r for i, r in _rows(name).items() if i.startswith(prefix)]
        assert len(rows) == (24 if prefix == "dgxc2411" else 20)
        for r in rows:
            assert r["fp8_param_gather"] == ("1" if r["dtype"] == "fp8" else ""), r["id"]
            assert ("fp8_params" in r["note"]) == (r["dtype"] == "fp8"), r["id"]
    # the later NeMo 2 rows leave it to the 25.02 profile (its plugin default: off)
    assert all(r["fp8_param_gather"] == "" for i, r in _rows("training_dgxc.csv").items()
               if i.startswith("dgxc2504"))


def test_llama_24_11_rows_state_cudnn_attention_as_configure_sh_exports():
    rows = [r for i, r in _rows("training_dgxc.csv").items() if i.startswith("dgxc2411-llama3.1")]
    assert len(rows) == 12
    assert all(r["attention"] == "cudnn" and "NVTE_FLASH_ATTN=0" in r["note"] for r in rows)


def test_the_gb300_fsdp_row_offloads_its_recipes_20_layers(monkeypatch):
    """Megatron-Bridge@v0.4.2 llama3_workload_base_configs.py LLAMA3_70B_PRETRAIN_CONFIG_GB300_FP8_CS_V2
    (L211-216): Megatron FSDP, MBS 2, cpu_offloading_num_layers 20 (overrides.py L140-143:
    cpu_offloading on, weights not offloaded); the archive row states it (cells59b's lead 2)."""
    import bridge_archive_rows as gen
    import bridge_recipe_cells as cells
    import mirror_rows

    from trainsim.validate.training import row_config

    rid = "bridgearch2604p1-llama3-70b-gb300-64-fp8"
    with open(ROOT / "benchmarks" / "training_bridge_archive.csv", newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    row = rows[rid]
    assert (row["cpu_offloading_num_layers"], row["options"], row["recompute"]) == \
        ("20", "dp_overlap", "none")
    cfg = row_config(row)
    assert cfg.parallel.cpu_offloading_num_layers == 20 and cfg.parallel.zero_stage == 3
    # every other read row's config sets no offloading, and says so
    read = {**cells.ROWS_2606, **cells.ROWS_2604}
    assert {rows[i]["cpu_offloading_num_layers"] for i in read if i != rid} == {"0"}
    if not mirror_rows.mirror(cells.REPO_DIR).exists():
        pytest.skip("no Megatron-Bridge mirror")
    generated = {r["id"]: r for r in gen.rows()}
    wrong = {**cells.ROWS_2604, rid: {**cells.ROWS_2604[rid], "cpu_offloading_num_layers": "0"}}
    monkeypatch.setattr(cells, "RELEASES", {"26.04": ("v0.4.2", wrong)})
    assert [b for b in cells.check(generated) if rid in b and "cpu_offloading" in b]
