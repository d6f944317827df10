"""``cluster.gpu`` in a config may name a GPU spec file (catalog units), read relative to the
config file's directory as ``model.hf_config`` is, and giving the same GPU as
``search/plan --gpu FILE`` or as a mapping written in the config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainsim.catalog import load_run_config, run_config_from_dict
from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
GPU_FILE = ROOT / "examples" / "gpu-hypothetical.yaml"
RUN = {"model": "llama3-8b", "parallel": {"tp": 2},
       "training": {"global_batch_size": 128, "seq_length": 8192}}


def _config(tmp_path: Path, gpu: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**RUN, "cluster": {"gpu": gpu, "num_gpus": 8}}))
    return path


def test_a_gpu_file_relative_to_the_config_reads_as_its_mapping(tmp_path):
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "mine.yaml").write_text(GPU_FILE.read_text())
    rc = load_run_config(_config(tmp_path, "gpus/mine.yaml"))
    inline = run_config_from_dict({**RUN, "cluster": {"gpu": yaml.safe_load(GPU_FILE.read_text()),
                                                      "num_gpus": 8}})
    assert rc.cluster.gpu == inline.cluster.gpu
    assert rc.cluster.gpu.hbm_bytes == 144 * 2**30  # hbm_gib: 144, converted once at load


def test_a_gpu_file_under_a_gpu_key_and_an_override_by_set(tmp_path):
    (tmp_path / "wrapped.yml").write_text(yaml.safe_dump({"gpu": yaml.safe_load(
        GPU_FILE.read_text())}))
    rc = load_run_config(_config(tmp_path, "h100"), ["cluster.gpu=wrapped.yml"])
    assert rc.cluster.gpu.name == "hypothetical-h100-hbm4"


@pytest.mark.parametrize("gpu,text,match", [
    ("missing.yaml", None, "no such GPU spec file"),
    ("list.yaml", "- a\n- b\n", "mapping of GPU fields"),
    ("bad.yaml", "name: x\nhbm_gib: -1\n", "hbm"),
])
def test_a_bad_gpu_file_is_one_config_error(tmp_path, gpu, text, match):
    if text is not None:
        (tmp_path / gpu).write_text(text)
    with pytest.raises(ConfigError, match=match):
        load_run_config(_config(tmp_path, gpu))


def test_catalog_names_still_read_as_names(tmp_path):
    assert load_run_config(_config(tmp_path, "h100")).cluster.gpu.name.startswith("h100")
