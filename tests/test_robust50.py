"""robust50: the failure classes fuzz50 found, one test each (benchmarks/fuzz50.py)."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest
import yaml

from trainsim.errors import ConfigError, TrainsimError
from trainsim.network.topology import load_topology

SMALL = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {},
         "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}
DB = Path(__file__).resolve().parent.parent / "src" / "trainsim" / "data" / "kernels" \
    / "h100-sxm-80gb.json"


def _topology(tmp_path: Path, **edit) -> str:
    path = tmp_path / "t.yaml"
    spec = {"builder": "rail_fat_tree", "nodes": 4, "gpus_per_node": 8, **edit}
    path.write_text(yaml.safe_dump({k: v for k, v in spec.items() if v != "drop"}))
    return str(path)


@pytest.mark.parametrize("edit, words", [
    ({"nic_Gbps": "x"}, "nic_Gbps = 'x' is not a number"),      # was ValueError in _si
    ({"nodes": 2.5}, "nodes = 2.5 must be a whole number"),     # was TypeError in the builder
    ({"nodes": None}, "nodes = None must be a whole number"),
    ({"nodes": True}, "nodes = True must be a whole number"),   # was one node, in silence
    ({"spines": 0}, "spines = 0 must be a whole number"),       # was the default, in silence
    ({"nvlink_bw_Bps": 0}, "nvlink_bw_Bps = 0 must be a finite number > 0"),  # likewise
    ({"link_latency_us": -1}, "link_latency_us = -1 must be a finite number >= 0"),
    ({"builder": ["rail_fat_tree"]}, "topology builder ['rail_fat_tree'] unknown"),
    ({"builder": "torus", "dims": 5, "nodes": "drop", "gpus_per_node": "drop"},
     "dims = 5 must be a list"),                                 # was TypeError in torus
])
def test_a_topology_file_value_of_the_wrong_kind_is_refused_by_its_key(tmp_path, edit, words):
    with pytest.raises(ConfigError, match=None) as err:
        load_topology(_topology(tmp_path, **edit))
    assert words in str(err.value)


def test_a_huge_topology_file_is_refused_before_it_is_built(tmp_path):
    """A million nodes (30+ CPU s of building) or a million-switch leaf: the flow backend's
    fabric limit, counted from the file before anything is built."""
    for edit in ({"nodes": 10**6}, {"nodes_per_leaf": 10**6}):
        start = time.process_time()
        with pytest.raises(TrainsimError, match="TRAINSIM_MAX_FLOWS"):
            load_topology(_topology(tmp_path, **edit))
        assert time.process_time() - start < 1.0
    assert len(load_topology(_topology(tmp_path)).gpus) == 32  # a plain file still builds


def test_every_topology_preset_still_builds():
    from trainsim.network.topology import topology_names
    assert {n: len(load_topology(n).gpus) for n in topology_names()} == {
        "dgx-a100-superpod": 1120, "dgx-h100-superpod": 1024, "rail-optimized": 256}


def test_a_checkpoint_interval_shorter_than_an_iteration_is_refused():
    """A 1 ms interval on a 6 ms iteration was priced as several checkpoints inside it
    (goodput 0.33); a --days window checks it against the simulated iteration (robust51)."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.reliability import ReliabilityConfig
    from trainsim.reliability.config import CheckpointConfig
    from trainsim.reliability.goodput import goodput
    cfg = run_config_from_dict(copy.deepcopy(SMALL))
    rel = ReliabilityConfig(checkpoint=CheckpointConfig(interval_s=1e-3))
    for kw in ({"tokens": 1e9}, {"days": 54.0}):
        with pytest.raises(ConfigError, match="shorter than one iteration"):
            goodput(cfg, rel, trials=5, **kw)
    ok = goodput(cfg, ReliabilityConfig(checkpoint=CheckpointConfig(interval_s=10.0)),
                 tokens=1e9, trials=5)
    assert ok.plan.effective_interval_s == 10.0


def test_no_interval_is_shorter_than_the_step():
    """A Daly interval below one iteration (a very high failure rate) is one iteration."""
    from trainsim.reliability.plan import RunPlan
    plan = RunPlan(mode_names=("f",), mode_rates=(1.0,), mode_planned=(False,),
                   recovery_s=((0.0,) * 6,), interval_s=1e-4, step_s=0.5)
    assert plan.effective_interval_s == 0.5
    assert plan.with_interval(2.0).effective_interval_s == 2.0


def _db(tmp_path: Path, edit) -> str:
    data = json.loads(DB.read_text())
    edit(data)
    path = tmp_path / "db.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.clear(), "it is format None for gpu None"),
    (lambda d: d.pop("device_name"), "missing top-level key 'device_name'"),
    (lambda d: d.update(format="trainsim-kernel-db/9"), "format 'trainsim-kernel-db/9'"),
    (lambda d: d.update(gpu="h200-sxm-141gb"), "for gpu 'h200-sxm-141gb'"),
    (lambda d: d.update(notes=5), "notes must be a list of strings"),
    (lambda d: d.update(kernels=5), "kernels must be a list of records"),
    (lambda d: d["layers"][0].update(tp=[]), "layers[0].tp=[] must be a number"),
    (lambda d: d["layers"][0].update(submodules="x"), "submodules must be an object"),
    (lambda d: d["layers"][0].update(kernels=["x"]), "layers[0].kernels[0] needs a name"),
])
def test_a_merge_base_is_checked_before_anything_is_measured(tmp_path, edit, words):
    """profile --merge found a foreign or damaged --out only when it wrote the first partial
    database, after the measurements began (a JSON list or a string ``notes``: an internal
    error); now refused up front, in one line, by the same checks the write makes."""
    from trainsim.profile.run import check_base, read_db
    path = _db(tmp_path, edit)
    with pytest.raises(TrainsimError) as err:
        check_base(read_db(path), "h100-sxm-80gb", path)
    assert words in str(err.value) and "--merge" in str(err.value)


def test_the_bundled_databases_are_mergeable():
    from trainsim.profile.run import check_base
    for gpu in ("h100-sxm-80gb", "h200-sxm-141gb"):
        path = DB.with_name(f"{gpu}.json")
        check_base(json.loads(path.read_text()), gpu, path)


def test_profile_merge_refuses_a_json_list_in_one_line(tmp_path):
    from click.testing import CliRunner

    from trainsim.cli import main
    out = tmp_path / "list.json"
    out.write_text("[]")
    r = CliRunner().invoke(main, ["profile", "--gpu", "h100-sxm-80gb", "--out", str(out),
                                  "--merge", "--device", "cpu", "--quick", "--models",
                                  "llama3-8b", "--tp", "1", "--seq", "4096", "--no-layers"])
    assert r.exit_code == 2
    assert "it is not a JSON object" in r.output and "Traceback" not in r.output
