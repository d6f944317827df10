"""One bandwidth convention (issue 18): every bandwidth a user writes names its unit
(``_gbyte_s``: GB/s, ``_gbit_s``: Gbit/s); the old ``*_gbps`` names still work, with one
deprecation line, and predict the same."""

from __future__ import annotations

import json
import warnings

import pytest
from click.testing import CliRunner

from trainsim.catalog import gpu, node, run_config_from_dict
from trainsim.cli import main
from trainsim.config._build import DeprecatedName
from trainsim.errors import ConfigError

NEW = {"nic_gbit_s_per_gpu": 200, "nvlink_gbyte_s": 300,
       "gpu_overrides": {"hbm_gbyte_s": 3000, "nvlink_gbyte_s": 400}}
OLD = {"nic_gbps_per_gpu": 200, "nvlink_gbps": 300,
       "gpu_overrides": {"hbm_bw_gbps": 3000, "nvlink_gbps": 400}}


def raw(cluster: dict) -> dict:
    return {"model": {"hidden_size": 256, "num_layers": 2, "num_attention_heads": 4,
                      "vocab_size": 1024},
            "training": {"global_batch_size": 16, "seq_length": 256},
            "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 16, "compute_db": None, **cluster}}


def test_new_names_carry_their_units_into_si():
    """nic_gbit_s_per_gpu is Gbit/s (200 -> 25e9 B/s); the *_gbyte_s fields are GB/s."""
    c = run_config_from_dict(raw(NEW)).cluster
    assert c.nic_bw_Bps == 25e9 and c.intra_node_bw_Bps == 300e9
    assert c.gpu.hbm_bw_Bps == 3000e9 and c.gpu.nvlink_bw_Bps == 400e9


def test_old_names_mean_the_same_and_warn_once_each():
    """The deprecated names give the identical config, each with a warning naming its
    replacement and its unit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = run_config_from_dict(raw(OLD))
    assert old == run_config_from_dict(raw(NEW))
    messages = sorted(str(w.message) for w in caught if w.category is DeprecatedName)
    assert len(messages) == 4
    assert "cluster.nic_gbps_per_gpu is deprecated; write cluster.nic_gbit_s_per_gpu (the same " \
           "number, Gbit/s)" in messages
    assert any("hbm_gbyte_s (the same number, GB/s)" in m for m in messages)


def test_both_names_of_one_field_is_an_error():
    with pytest.raises(ConfigError, match="nvlink_gbps and cluster.nvlink_gbyte_s are the same"):
        run_config_from_dict(raw({"nvlink_gbps": 300, "nvlink_gbyte_s": 300}))


def test_an_error_names_the_field_as_the_user_wrote_it():
    with pytest.warns(DeprecatedName), pytest.raises(ConfigError,
                                                     match="cluster.nic_gbps_per_gpu must be"):
        run_config_from_dict(raw({"nic_gbps_per_gpu": "fast"}))


def test_catalog_files_use_the_new_names():
    """The shipped GPUs and nodes are written in the convention (no warning on load)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecatedName)
        assert node("dgx-h100")["nic_gbit_s_per_gpu"] == 400
        gpu.cache_clear()
        assert gpu("h100-sxm-80gb").hbm_bw_Bps == 3352e9


def test_cli_prints_one_warning_line_and_the_same_prediction(tmp_path):
    """simulate with old names: the same JSON, and one 'warning:' line per deprecated name."""
    import yaml

    for name, cluster in (("old", OLD), ("new", NEW)):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(raw(cluster)))
    run = lambda f: CliRunner().invoke(main, ["simulate", str(tmp_path / f), "--format", "json"])
    old, new = run("old.yaml"), run("new.yaml")
    assert old.exit_code == new.exit_code == 0
    said = json.loads(old.stdout).pop("warnings")  # fuzz16: the JSON carries them too
    assert {**json.loads(old.stdout), "warnings": []} == json.loads(new.stdout)
    lines = [ln for ln in old.stderr.splitlines() if "deprecated" in ln]
    assert len(lines) == 4 and all(ln.startswith("warning: ") for ln in lines)
    assert [f"warning: {w}" for w in said] == lines
    assert "deprecated" not in new.stderr


def test_cli_option_old_spelling_still_works():
    """collective --nic-gbps (deprecated) equals --nic-gbit-s, with a warning line."""
    args = ["collective", "--gpus", "16", "--sizes", "1G:1G", "--format", "json"]
    old = CliRunner().invoke(main, args + ["--nic-gbps", "200"])
    new = CliRunner().invoke(main, args + ["--nic-gbit-s", "200"])
    default = CliRunner().invoke(main, args)
    assert old.exit_code == new.exit_code == 0
    assert old.stdout == new.stdout != default.stdout
    assert "warning: --nic-gbps is deprecated; write --nic-gbit-s" in old.stderr


def test_cli_option_both_spellings_is_a_usage_error():
    """--nic-gbps with --nic-gbit-s is refused in either order (the value would be ambiguous)."""
    for pair in (["--nic-gbps", "100", "--nic-gbit-s", "200"],
                 ["--nic-gbit-s", "0.5", "--nic-gbps", "100"]):
        r = CliRunner().invoke(main, ["collective", "--sizes", "1K:1K", *pair])
        assert r.exit_code == 2 and "are the same option; give --nic-gbit-s only" in r.stderr
