"""What a training row's options cell means (validation README, format v2): the complete list of
the features the run used, framework defaults it kept included. Only an empty cell takes the
framework's defaults; a stated one replaces them (``validate.row_settings.stated_options``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from helpers import overlaps  # (grad reduce, param gather, p2p, TP) overlap as validate reads it

from trainsim.catalog.schema_checks import RECIPE_OPTIONS
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.row_settings import KNOWN_OPTIONS, omitted_defaults, training_base

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import options_omitted

# the guide's DeepSeek-V3 workload (training_mcore_dsv3_gb200.csv): PP 8, VPP 4, EP 32
MCORE = {"id": "r", "model": "deepseek-v3", "gpu": "gb200", "num_gpus": "256",
         "gpus_per_node": "32", "tp": "1", "pp": "8", "vpp": "4", "ep": "32",
         "global_batch_size": "2048", "micro_batch_size": "1", "seq_length": "4096",
         "recompute": "selective", "distributed_optimizer": "1", "sequence_parallel": "0",
         "dtype": "bf16", "framework": "megatron-core", "framework_version": "0.16",
         "measured_iteration_s": "1", "options": ""}
# a NeMo 24.09 interleaved run (the layout of dgxc-benchmarking's Nemotron-4 340B, 35a9aecc8d)
NEMO = {"id": "n", "model": "llama2-70b", "gpu": "h100-sxm-80gb", "num_gpus": "128",
        "gpus_per_node": "8", "tp": "8", "pp": "8", "vpp": "10", "sequence_parallel": "1",
        "global_batch_size": "32", "micro_batch_size": "1", "seq_length": "4096",
        "dtype": "bf16", "framework": "nemo", "framework_version": "24.09",
        "measured_iteration_s": "1", "options": ""}


def _readme_cell(column: str) -> str:
    text = (BUNDLED_DIR / "README.md").read_text()
    return re.search(rf"^\| {column} \| (.*) \|$", text, re.MULTILINE).group(1)


def test_readme_defines_the_cell_as_the_runs_features_and_only_empty_cells_as_unstated():
    # the two sentences the reading rests on; if either changes, revisit stated_options
    assert _readme_cell("options").startswith("`;`-separated features the run used:")
    text = (BUNDLED_DIR / "README.md").read_text()
    assert "**Unknown cells.** An empty cell is a setting the source did not state." in text
    # and the vocabulary has no negation: a run that turned a framework default off can say so
    # only by a stated cell that leaves it out
    assert not {f"no_{o}" for o in RECIPE_OPTIONS} & KNOWN_OPTIONS


def test_an_empty_cell_takes_the_framework_defaults():
    # Megatron-LM --no-overlap-p2p-communication is store_false: the interleaved schedule
    # overlaps its sends unless told not to (arguments.py @ eb0783b6d3 L2674)
    assert overlaps(MCORE)[2] is True
    assert overlaps(NEMO)[:3] == (True, True, True)
    assert omitted_defaults(MCORE) == set()


def test_a_stated_cell_is_the_whole_list():
    assert overlaps(MCORE, options="dp_overlap")[:3] == (True, True, False)
    assert overlaps(MCORE, options="dp_overlap;pp_overlap")[:3] == (True, True, True)
    assert overlaps(NEMO, options="dp_overlap")[:3] == (True, True, False)
    # nor does a stated cell leave the framework's user choices to the tuner
    assert "tp_comm_overlap" in training_base(NEMO)[1]
    assert "tp_comm_overlap" not in training_base({**NEMO, "options": "dp_overlap"})[1]


def test_omitted_defaults_names_what_a_stated_cell_turns_off():
    assert omitted_defaults({**MCORE, "options": "dp_overlap"}) == {"pp_overlap"}
    assert omitted_defaults({**MCORE, "options": "dp_overlap;pp_overlap"}) == set()
    assert omitted_defaults({**MCORE, "vpp": "1", "options": "dp_overlap"}) == set()
    assert omitted_defaults({**NEMO, "options": "pp_overlap"}) == {"dp_overlap"}


def test_options_omitted_lists_the_rows(tmp_path):
    rows = [MCORE, {**MCORE, "id": "s", "options": "cuda_graphs"},
            {**MCORE, "id": "t", "options": "cuda_graphs;pp_overlap"}]
    path = tmp_path / "t.csv"
    path.write_text("\n".join([",".join(MCORE)] + [",".join(r.values()) for r in rows]) + "\n")
    assert options_omitted.omitted([path]) == [("t.csv", "s", "cuda_graphs", "pp_overlap", 32)]
