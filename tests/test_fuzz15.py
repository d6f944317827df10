"""Fifteenth robustness sweep (27th session, fuzz15; benchmarks/fuzz_sweep15.py): a node larger
than any NVLink domain built, a number's underscores read three ways, a config.json of a
classification or question-answering head, a kernel row's cell its kind does not read. Each
case failed on main e355ae9 before its fix (the sanity cases beside them pass there)."""

from __future__ import annotations

import csv
import io
import json
import warnings
from pathlib import Path

import pytest
from helpers import BASE, cli, load_script, one_error_line

import trainsim
from trainsim import catalog
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.validate import read_rows
from trainsim.validate.kernels import predict_kernel_row

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "trainsim" / "data" / "validation"


def _run(cluster: dict) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict({
        "model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                  "vocab_size": 1024},
        "training": {"global_batch_size": cluster["num_gpus"], "seq_length": 512},
        "cluster": {"compute_db": None, **cluster}})


# ------------------------------------------- gpus_per_node past the NVLink domain built

def test_a_node_past_any_scale_up_fabric_is_refused():
    """Before: 1,000 A100s per node were one NVLink domain, priced at NVLink's rate."""
    with pytest.raises(ConfigError, match=r"gpus_per_node=1000 .* no scale-up fabric joins "
                                          r"more than 576"):
        _run({"gpu": "a100-sxm-80gb", "num_gpus": 1000, "gpus_per_node": 1000})
    with pytest.raises(ConfigError, match="576"):  # a node larger than the run itself too
        _run({"gpu": "gb200", "num_gpus": 8, "gpus_per_node": 4096})


@pytest.mark.parametrize(("gpu", "per_node", "built"), [
    ("a100-sxm-80gb", 64, 16), ("h100-sxm-80gb", 16, 8), ("b200-sxm-180gb", 72, 8),
    ("gb200", 144, 72), ("mi300x", 16, 8)])
def test_a_node_past_the_largest_domain_built_warns_naming_it(gpu, per_node, built):
    """Before: priced silently as an NVLink domain no such system has (a B200 in a 72-GPU rack
    stays a what-if, priced as stated)."""
    with pytest.warns(TrainsimWarning, match=rf"gpus_per_node={per_node} exceeds the largest "
                                             rf"NVLink domain any {gpu} system was built with "
                                             rf"\({built} GPUs\)"):
        cfg = _run({"gpu": gpu, "num_gpus": 2 * per_node, "gpus_per_node": per_node})
    assert cfg.cluster.gpus_per_node == per_node


def test_every_catalog_node_fits_its_gpus_domain_and_every_switched_gpu_states_one():
    """Sanity: each node preset is a system built (no warning), DGX-2's 16 V100 and HGX A100
    16-GPU included; PCIe cards state their server's PCIe fabric (fuzz16)."""
    for name in ("dgx-1-v100", "dgx-2", "dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72",
                 "gb300-nvl72", "hgx-a800", "hgx-b300", "hgx-h200", "hgx-h800",
                 "mi250x-node", "mi300x-platform"):
        n = catalog.node(name)
        assert n["gpus_per_node"] <= catalog.gpu(n["gpu"]).largest_nvlink_domain, name
    for name in ("a100-sxm-40gb", "a100-sxm-80gb"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _run({"gpu": name, "num_gpus": 32, "gpus_per_node": 16})
    for name in ("a100-pcie-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "l40s-pcie-48gb"):
        # fuzz16: a PCIe card states the most cards one server holds (its PCIe fabric)
        assert catalog.gpu(name).pcie_only and catalog.gpu(name).largest_nvlink_domain == 10


def test_the_domain_is_named_on_the_command_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    line = one_error_line(cli("simulate", str(path), "--set", "cluster.gpus_per_node=1000",
                              "--set", "cluster.num_gpus=1000",
                              "--set", "training.global_batch_size=1000"))
    assert "gpus_per_node=1000" in line and "576" in line


# ------------------------------------------- a number's underscores: in threes, everywhere

@pytest.mark.parametrize("value", ["1_0", "2_", "1__000", "10_00"])
def test_an_underscore_not_grouping_threes_is_refused_in_set_yaml_and_json(tmp_path, value):
    """Before: ``--set parallel.tp=1_0`` and YAML ``tp: 1_0`` ran tp 10 (YAML 1.1, Python's
    int), a JSON string "1_0" too."""
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    line = one_error_line(cli("simulate", str(path), "--set", f"parallel.tp={value}"))
    assert "separates digits in threes" in line
    path.write_text(BASE + f"parallel: {{tp: {value}}}\n")
    assert "separates digits in threes" in one_error_line(cli("simulate", str(path)))
    cfg = {"model": "llama3-8b", "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8},
           "parallel": {"tp": value}}
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    assert "separates digits in threes" in one_error_line(cli("simulate",
                                                              str(tmp_path / "c.json")))


def test_underscores_in_threes_read_as_the_number_everywhere(tmp_path):
    """Sanity (and before: ``--interval 1_000`` was refused while ``--set x=1_000`` read)."""
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    plain = cli("simulate", str(path), "--set", "training.global_batch_size=1024",
                "--format", "json")
    grouped = cli("simulate", str(path), "--set", "training.global_batch_size=1_024",
                  "--format", "json")
    assert plain.exit_code == 0 and plain.stdout == grouped.stdout
    from trainsim.reliability.cli import parse_duration, parse_tokens
    assert parse_duration("1_000") == 1000.0 and parse_tokens("1_500B") == 1.5e12
    for bad in ("1_0", "1_0m"):
        with pytest.raises(ConfigError, match="--interval='1_0"):
            parse_duration(bad)


@pytest.mark.parametrize("args", [
    ("search", "llama3-8b", "--gpus", "8", "--global-batch", "64", "--seq", "2048",
     "--tp", "1_0"),
    ("search", "llama3-8b", "--gpus", "8", "--global-batch", "64", "--seq", "2048",
     "--tp", "2,4_0"),
    ("search", "llama3-8b", "--gpus", "8_0", "--global-batch", "64", "--seq", "2048")])
def test_cli_counts_and_lists_refuse_a_mistyped_underscore(args):
    """Before: ``--tp 1_0`` searched tp 10, ``--gpus 8_0`` 80 GPUs (Python's int)."""
    assert "separates digits in threes" in one_error_line(cli(*args))


def test_every_integer_option_type_refuses_a_mistyped_underscore():
    """The CLI's integer options (``cli_guard.AsciiIntRange``: --port, --workers, --seed,
    --trials, --mbs ...). Before: ``serve --port 8_0`` served on port 80."""
    import click

    from trainsim.cli_guard import POSITIVE_INT, AsciiIntRange
    assert POSITIVE_INT.convert("1_000", None, None) == 1000
    for kind in (POSITIVE_INT, AsciiIntRange(0, 65535)):
        with pytest.raises(click.BadParameter, match="separates digits in threes"):
            kind.convert("8_0", None, None)


def test_a_csv_count_cell_refuses_a_mistyped_underscore(tmp_path):
    """Before: a training row's tp of '1_0' was 10 (``float('1_0')``)."""
    records = list(csv.reader(io.StringIO((DATA / "training_public.csv").read_text())))
    head, row = records[0], records[1]
    row = [("1_0" if c == "num_layers" else v) for c, v in zip(head, row)]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([head, row])
    path = tmp_path / "t.csv"
    path.write_text(out.getvalue())
    result = cli("validate", str(path), "--format", "json", "--workers", "1")
    assert "separates digits in threes" in result.output


# ------------------------------------------- config.json of a head that is not a causal LM

LLAMA = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4,
         "num_attention_heads": 8, "vocab_size": 32000, "intermediate_size": 1376}


@pytest.mark.parametrize("arch", ["LlamaForSequenceClassification", "LlamaForTokenClassification",
                                  "LlamaForQuestionAnswering", "Qwen2ForSequenceClassification"])
def test_a_config_json_of_a_task_head_is_refused(tmp_path, arch):
    """Before: priced as a causal LM with a hidden x vocabulary output layer and loss."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "architectures": [arch]}))
    with pytest.raises(ConfigError, match=f"architectures '{arch}' is a .* head, not a causal "
                                          "language model's output layer"):
        catalog.model_from_hf_config(path)
    path.write_text(json.dumps({**LLAMA, "architectures": 5}))
    with pytest.raises(ConfigError, match="architectures must be a list of class names"):
        catalog.model_from_hf_config(path)


@pytest.mark.parametrize("archs", [["LlamaForCausalLM"], "LlamaForCausalLM", None, [],
                                   ["LlamaForCausalLM", "LlamaForSequenceClassification"],
                                   ["Gemma3ForConditionalGeneration"], ["GPT2LMHeadModel"]])
def test_a_causal_lm_config_json_reads_as_before(tmp_path, archs):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "architectures": archs}))
    assert catalog.model_from_hf_config(path).vocab_size == 32000


# ------------------------------------------- a kernel row's cell its kind does not read

def _kernel_row(kind: str) -> dict[str, str]:
    rows = read_rows(DATA / "kernels_published.csv")[1]
    return dict(next(r for r in rows if r["kind"].strip() == kind))


@pytest.mark.parametrize(("kind", "column", "value"), [
    ("gemm", "groups", "8"), ("gemm", "causal", "1"), ("gemm", "tokens", "4096"),
    ("attention_fwd", "m", "4096"), ("attention_bwd", "groups", "2"),
    ("memory_bound", "causal", "0"), ("moe_block", "head_dim", "128")])
def test_a_kernel_cell_its_kind_does_not_read_is_refused(kind, column, value):
    """Before: a plain GEMM's groups=8 or causal=1 was ignored, the row priced as one GEMM."""
    row = _kernel_row(kind)
    assert not (row.get(column) or "").strip()
    good = predict_kernel_row(row, compute_db=None)
    assert good.error is None
    row[column] = value
    bad = predict_kernel_row(row, compute_db=None)
    assert bad.error is not None and f"column '{column}'='{value}' does not apply to a {kind}" \
        in bad.error, bad.error


def test_every_bundled_kernel_row_states_only_its_kinds_cells():
    """Sanity: the kernels files' rows fill only the columns their kind reads."""
    from trainsim.validate.kernels import KIND_COLUMNS

    files = [DATA / "kernels_published.csv", DATA / "kernels_h100_measured.csv",
             ROOT / "benchmarks" / "kernels_blackwell.csv"]
    for path in files:
        for row in read_rows(path)[1]:
            own = KIND_COLUMNS[row["kind"].strip().lower()]
            for cols in KIND_COLUMNS.values():
                assert all(c in own or not (row.get(c) or "").strip() for c in cols), row["id"]


def test_fuzz_sweep15_finds_no_failure_class(capsys):
    """The whole sweep (793 inputs, ~2 s): 15 failure classes on e355ae9."""
    fuzz_sweep15 = load_script(ROOT / "benchmarks" / "fuzz_sweep15.py")
    assert fuzz_sweep15.main([]) == 0, capsys.readouterr().out
