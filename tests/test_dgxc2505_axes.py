"""benchmarks/dgxc2505_axes.py (dgxc30, 2026-11-26): where training_dgxc2505.csv's error lives.
The grouping adds up, the families and layouts are read from the cells, the twin rows it
compares exist in their files with the same layout, and the release pairs are the same run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
DIAG = load_script(ROOT / "benchmarks" / "dgxc2505_axes.py")


def _row(i, gpu, dtype, ep="1", experts="", options="dp_overlap"):
    return {"id": i, "gpu": gpu, "dtype": dtype, "fp8_recipe": "delayed" if dtype == "fp8" else "",
            "ep": ep, "num_experts": experts, "options": options}


def test_group_shares_add_up_and_signs_are_kept():
    rows = [_row("a", "gb200", "bf16"), _row("b", "gb200", "fp8", options="cuda_graphs"),
            _row("c", "h100-sxm-80gb", "bf16", ep="8", experts="256")]
    err = {"a": -0.2, "b": -0.1, "c": 0.1}
    out = DIAG.group(rows, err)
    for cells in out.values():
        assert sum(c[4] for c in cells) == pytest.approx(100.0)
        assert sum(c[1] for c in cells) == 3
    gpu = {c[0]: c for c in out["gpu"]}
    assert gpu["gb200"][2] == pytest.approx(-15.0) and gpu["gb200"][3] == pytest.approx(15.0)
    assert gpu["h100"][2] == pytest.approx(10.0)
    assert {c[0] for c in out["family"]} == {"dense", "moe"}
    assert {c[0]: c[1] for c in out["cuda graphs"]} == {"off": 2, "on": 1}
    assert {c[0] for c in out["precision"]} == {"bf16", "fp8 delayed"}


def test_every_row_of_the_file_has_a_family_and_layout():
    rows = DIAG.read(DIAG.FILE)
    assert len(rows) == 27
    fam = {r["id"]: DIAG.family(r) for r in rows}
    assert sum(v == "moe" for v in fam.values()) == 5
    assert all(v == "moe" for i, v in fam.items() if "deepseek" in i)
    r = next(r for r in rows if r["id"] == "dgxc2505-llama3.1-405b-fp8-gb200-128")
    assert DIAG.layout(r) == "tp4 pp8 vpp8 cp2 gbs64"


def test_twins_and_release_pairs_exist_and_match():
    own = {r["id"]: r for r in DIAG.read(DIAG.FILE)}
    for path, ids in DIAG.TWIN_IDS.items():
        found = {r["id"]: r for r in DIAG.read(path) if r["id"] in ids}
        assert set(found) == set(ids), path
        own.update(found)
    for new, old in DIAG.RELEASE_PAIRS.items():
        a, b = own[new], own[old]
        for k in ("model", "gpu", "num_gpus", "tp", "pp", "global_batch_size", "micro_batch_size",
                  "dtype", "seq_length"):
            assert a[k] == b[k], (new, k)
        assert (a["framework_version"], b["framework_version"]) == ("25.04", "25.02")
