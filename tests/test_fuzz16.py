"""Sixteenth robustness sweep (28th session, fuzz16; benchmarks/fuzz_sweep16.py): a PCIe card's
node, a config.json of a bare trunk, the DDP bucket cache's size, an --ep that divides no
expert count, and layers JSONL files as Windows editors write them. Each case failed on main
0aabacb before its fix (the sanity cases beside them pass there)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from helpers import BASE, cli, load_script, one_error_line

import trainsim
from trainsim import catalog
from trainsim.errors import ConfigError, TrainsimWarning
from trainsim.validate import validate_file
from trainsim.workload import ddp_buckets as d

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "trainsim" / "data" / "validation"
PCIE = ("a100-pcie-40gb", "a100-pcie-80gb", "h100-nvl-94gb", "h100-pcie-80gb", "l40s-pcie-48gb",
        "rtx-pro-6000-blackwell")
TINY = {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4, "vocab_size": 1024}


def _run(cluster: dict) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict({
        "model": TINY, "training": {"global_batch_size": cluster["num_gpus"], "seq_length": 512},
        "cluster": {"compute_db": None, **cluster}})


# ------------------------------------------------------------------ a PCIe card's node

@pytest.mark.parametrize("gpu", PCIE)
def test_a_pcie_node_past_any_server_built_warns_as_a_pcie_node(gpu):
    """Before: 576 PCIe cards in one node were priced silently (no GPU stated a limit)."""
    with pytest.warns(TrainsimWarning, match=rf"gpus_per_node=16 exceeds the most {gpu} cards "
                                             r"any server was built with \(10, on PCIe"):
        _run({"gpu": gpu, "num_gpus": 32, "gpus_per_node": 16})
    with warnings.catch_warnings():  # ten dual-slot cards: built (Supermicro SYS-322GB-NR)
        warnings.simplefilter("error")
        _run({"gpu": gpu, "num_gpus": 10, "gpus_per_node": 10})


@pytest.mark.parametrize("gpu", PCIE)
def test_an_nvl72_rack_of_pcie_cards_is_refused(gpu):
    """Before: 72 PCIe cards priced as a GB200 NVL72 NVLink rack."""
    with pytest.raises(ConfigError, match=f"topology=nvl72 is an NVLink rack; {gpu} is a PCIe "
                                          "card"):
        _run({"gpu": gpu, "num_gpus": 72, "topology": "nvl72"})


def test_only_the_pcie_cards_say_pcie_only():
    """Sanity: every switched GPU keeps its NVLink domain and its warning."""
    said = {g for g in catalog.gpu_aliases() if catalog.gpu(g).pcie_only}
    assert said == set(PCIE)
    _run({"gpu": "gb200", "num_gpus": 72, "topology": "nvl72"})


def test_the_pcie_limit_reads_on_the_command_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    line = one_error_line(cli("simulate", str(path), "--set", "cluster.gpu=l40s-pcie-48gb",
                              "--set", "cluster.topology=nvl72", "--set", "cluster.num_gpus=72",
                              "--set", "cluster.gpus_per_node=72",
                              "--set", "training.global_batch_size=72"))
    assert "l40s-pcie-48gb is a PCIe card with no NVLink switch" in line


# ------------------------------------------------------------------ a bare-trunk config.json

LLAMA = {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4,
         "num_attention_heads": 8, "vocab_size": 32000, "intermediate_size": 1376}


@pytest.mark.parametrize("archs", [["LlamaModel"], "MistralModel", [" Qwen2Model "],
                                   ["LlamaModel", "LlamaForSequenceClassification"]])
def test_a_config_json_of_a_bare_trunk_is_refused(tmp_path, archs):
    """Before: a LlamaModel (no output layer, no loss: AutoModel's trunk, an embedding model)
    was priced as a causal LM with a hidden x vocabulary head."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "architectures": archs}))
    with pytest.raises(ConfigError, match="is a bare transformer trunk|is a sequence-class"):
        catalog.model_from_hf_config(path)


@pytest.mark.parametrize(("archs", "extra"), [
    (["LlamaModel", "LlamaForCausalLM"], {}), (["GPT2LMHeadModel"], {}),
    (["GPT2DoubleHeadsModel"], {}), (["XLMWithLMHeadModel"], {}),
    (["ChatGLMModel"], {"auto_map": {"AutoModelForCausalLM": "modeling_chatglm.X"}})])
def test_a_language_model_named_model_reads_as_before(tmp_path, archs, extra):
    """Sanity: a class with an LM head whose name ends in Model, and remote code's own class."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "architectures": archs, **extra}))
    assert catalog.model_from_hf_config(path).vocab_size == 32000


def test_a_bare_trunk_reads_as_one_line_through_a_run_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "architectures": ["LlamaModel"]}))
    conf = tmp_path / "c.yaml"
    conf.write_text(BASE.replace("model: {hidden_size: 256, num_layers: 4, num_attention_heads: "
                                 "4, vocab_size: 1024}", "model: {hf_config: config.json}"))
    line = one_error_line(cli("simulate", str(conf)))
    assert "'LlamaModel' is a bare transformer trunk" in line and "ForCausalLM" in line


def test_a_config_json_with_a_bom_exports_as_without(tmp_path):
    """Before: export/capture took a config.json opening with a byte-order mark for a run
    config ("unknown section 'model_type'"); simulate's hf_config reader read it."""
    text = json.dumps({**LLAMA, "architectures": ["LlamaForCausalLM"]})
    (tmp_path / "bom.json").write_text("\ufeff" + text, encoding="utf-8")
    (tmp_path / "plain.json").write_text(text, encoding="utf-8")
    for name in ("bom", "plain"):
        result = cli("export", str(tmp_path / f"{name}.json"), "--simai",
                     str(tmp_path / f"{name}.txt"))
        assert result.exit_code == 0, result.output
    assert (tmp_path / "bom.txt").read_text() == (tmp_path / "plain.txt").read_text()


# ------------------------------------------------------------------ the DDP bucket cache's size

def _moe(layers: int, experts: int, size: int) -> trainsim.RunConfig:
    return trainsim.run_config_from_dict({
        "model": {**TINY, "num_layers": layers, "num_experts": experts, "moe_router_topk": 2,
                  "moe_ffn_hidden_size": 64},
        "parallel": {"ddp_bucket_size": size},
        "training": {"global_batch_size": 8, "seq_length": 512},
        "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "compute_db": None}})


@pytest.fixture
def small_bound(monkeypatch):
    kept = dict(d._BUCKETS)
    d._BUCKETS.clear()
    monkeypatch.setattr(d, "_BUCKETS_HELD_MOST", 300)
    yield
    d._BUCKETS.clear()
    d._BUCKETS.update(kept)
    d._HELD[0] = sum(len(v[1]) for v in kept.values())


def test_the_bucket_cache_is_bounded_by_buckets_not_entries(small_bound):
    """Before: bounded at 4,096 entries of any size (512 experts x 256 layers with a one-
    parameter bucket: 526,596 buckets, 70 MB, in one entry). A chunk past the bound is not kept;
    the kept ones never hold more than the bound together; every answer is the pass's."""
    big = _moe(16, 32, 1)  # 16 layers x (dense tensors + 32 experts' 2 matrices): > 300 buckets
    closed, _ = d._buckets(big, range(16), True, True)
    assert len(closed) > 300 and not d._BUCKETS
    for layers in range(1, 9):
        c = _moe(layers, 8, 1)
        got = d._buckets(c, range(layers), True, True)
        want = d._bucketed(c, range(layers), True, True)
        assert (list(got[0]), got[1]) == (list(want[0]), want[1])
        held = sum(len(v[1]) for v in d._BUCKETS.values())
        assert held == d._HELD[0] <= 300
    assert 0 < len(d._BUCKETS) < 8  # emptied once on the way


# ------------------------------------------------------------------ --ep that divides no expert count

SEARCH = ("search", "mixtral-8x7b", "--gpus", "64", "--seq", "4096", "--global-batch", "64",
          "--tp", "2", "--pp", "4")


@pytest.mark.parametrize("how", [("--ep", "3,6"), ("--ep", "16"), ("--set", "parallel.ep=3")])
def test_a_search_whose_ep_divides_no_expert_count_says_so(how):
    """Before: "tp must divide the 32 attention heads, pp the 32 layers ... widen
    --tp/--pp/--cp", naming everything but ep."""
    line = one_error_line(cli(*SEARCH, *how))
    assert "ep must divide the 8 routed experts of mixtral-8x7b" in line, line


def test_a_plan_whose_ep_divides_no_expert_count_says_so():
    """Before: exit 1, "no GPU count up to 65536 meets the deadline"."""
    line = one_error_line(cli("plan", "mixtral-8x7b", "--tokens", "1e9", "--days", "1",
                              "--ep", "5"))
    assert "--ep=5: ep must divide the 8 routed experts" in line


def test_nothing_found_names_ep_for_a_moe_model():
    """A search refused for another reason still lists ep among the sizes that must divide."""
    line = one_error_line(cli(*SEARCH[:6], "--global-batch", "63", "--tp", "2", "--pp", "4",
                              "--ep", "8"))
    assert "ep the 8 routed experts" in line


# ------------------------------------------------------------------ layers JSONL as written on Windows

def _layers(n: int) -> list[str]:
    return (DATA / "layers_h100_measured.jsonl").read_text().splitlines()[:n]


@pytest.mark.parametrize("text", [
    "\ufeff" + "\r\n".join(_layers(2)) + "\r\n", "\n\n" + "\n".join(_layers(2)) + "\n"],
    ids=["bom-crlf", "leading-blank-lines"])
def test_a_layers_file_with_a_bom_or_leading_blank_lines_is_read(tmp_path, text):
    """Before: "not a training file (needs measured_iteration_s), a collectives file ..."."""
    path = tmp_path / "l.jsonl"
    path.write_bytes(text.encode())
    rows = validate_file(path, compute_db=None)[1]
    plain = validate_file(_write(tmp_path, "\n".join(_layers(2)) + "\n"), compute_db=None)[1]
    assert [r.predicted for r in rows] == [r.predicted for r in plain] and len(rows) == 2


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plain.jsonl"
    path.write_text(text)
    return path


def test_an_empty_jsonl_is_refused_as_no_layer_record(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("\n")
    line = one_error_line(cli("validate", str(path)))
    assert "no layer record" in line and "measured_iteration_s" not in line


def test_a_layer_record_given_twice_warns_as_a_csv_row_id_does(tmp_path):
    path = _write(tmp_path, "\n".join(_layers(2) + _layers(2)[1:]) + "\n")
    with pytest.warns(TrainsimWarning, match=r"lines 2 and 3 are both record 'llama3-8b-tp1"):
        rows = validate_file(path, compute_db=None)[1]
    assert len(rows) == 3
    with warnings.catch_warnings():  # the bundled file: no record twice
        warnings.simplefilter("error")
        validate_file(DATA / "layers_h100_measured.jsonl", compute_db=None)


# ------------------------------------------------------------------ a priced what-if's note in a job

def _job(kind: str, config: dict, options: dict, tmp_path: Path) -> dict:
    from trainsim.service import Settings, jobs
    settings = Settings(db_url=f"sqlite:///{tmp_path / 'jobs.db'}", workers=0, checkers=0)
    assert jobs.problem(kind, config, options, settings) is None
    return json.loads(jobs.run(kind, config, options, settings).result)


def test_a_simulate_job_carries_the_warnings_the_cli_prints(tmp_path):
    """Before: a service user asking for 16 PCIe cards per node read no note (the warning went
    to the worker's stderr); the CLI's JSON carried none either."""
    import yaml
    config = yaml.safe_load(BASE)
    config["cluster"].update(gpu="a100-pcie-80gb", num_gpus=16, gpus_per_node=16)
    config["training"]["global_batch_size"] = 16
    got = _job("simulate", config, {}, tmp_path)
    assert any("hypothetical 16-GPU PCIe node" in w for w in got["warnings"])
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    printed = cli("simulate", str(path), "--format", "json")
    assert json.loads(printed.stdout) == got
    assert _job("simulate", yaml.safe_load(BASE), {}, tmp_path)["warnings"] == []


def test_a_sweep_carries_each_points_warning_once(tmp_path):
    """Before: the sweep's JSON and a sweep job said nothing of a point past the GPU's domain."""
    import yaml
    config = yaml.safe_load(BASE)
    config["cluster"].update(num_gpus=32)
    config["cluster"].pop("gpus_per_node")
    config["training"]["global_batch_size"] = 32
    got = _job("sweep", config, {"vary": ["cluster.gpus_per_node=8,16,32"]}, tmp_path)
    said = [w for w in got["warnings"] if "largest NVLink domain" in w]
    assert len(said) == 2 and "gpus_per_node=16" in said[0] and "gpus_per_node=32" in said[1]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    printed = cli("sweep", str(path), "--vary", "cluster.gpus_per_node=8,16,32", "--format", "json")
    assert json.loads(printed.stdout)["warnings"] == got["warnings"]


# ------------------------------------------------------------------ a --set value's refusal

@pytest.mark.parametrize(("value", "said"), [
    ("training.global_batch_size=1_0", "--set training.global_batch_size: '1_0': an underscore"),
    ("parallel.tp=0b11", "--set parallel.tp: '0b11' reads as the binary number 3"),
    ("training.seq_length=1:30", "--set training.seq_length: '1:30' reads as a base-60")])
def test_a_set_value_refused_says_no_line_number(tmp_path, value, said):
    """Before: "--set training.global_batch_size: line 1: '1_0': ..." (the YAML reader's line
    of a one-line value; fuzz15's lead)."""
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    line = one_error_line(cli("simulate", str(path), "--set", value))
    assert said in line and "line 1" not in line
    path.write_text(BASE.replace("global_batch_size: 16", "global_batch_size: 1_6"))
    assert "c.yaml: line 2: '1_6'" in one_error_line(cli("simulate", str(path)))  # a file's kept


# ------------------------------------------------------------------ the sweep

@pytest.mark.slow
def test_fuzz_sweep16_finds_no_failure_class(capsys):
    """The whole sweep (419 inputs, ~15 s): 10 failure classes on 0aabacb."""
    fuzz_sweep16 = load_script(ROOT / "benchmarks" / "fuzz_sweep16.py")
    assert fuzz_sweep16.main([]) == 0, capsys.readouterr().out


def test_fuzz_sweep16_pcie(capsys):
    """The sweep's PCIe surface (46 inputs, ~0.1 s); the rest runs under -m slow."""
    fuzz_sweep16 = load_script(ROOT / "benchmarks" / "fuzz_sweep16.py")
    assert fuzz_sweep16.main(["--only", "pcie"]) == 0, capsys.readouterr().out
