"""benchmarks/bridge_releases.py's inputs: the published speeds it reads against the archive
they were copied from, the workloads it treats as one, and the recipe cells it takes from the
errata file. No prediction is run here (the script is the check; these keep its inputs true)."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.helpers import load_script, mirror_source
from trainsim.validate import BUNDLED_DIR

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "bridge_releases.py")
ARCHIVE = ("NVIDIA-NeMo+Megatron-Bridge", "067f987df03b8355b03192d88d70f1709fedf51a",
           "docs/performance-summary-archive.md")
MODEL_KEY = {"llama3.1-405b": "LLAMA3.1_405B", "llama3-70b": "LLAMA3_70B",
             "qwen3-235b-a22b": "Qwen3_235B"}
SYSTEM_KEY = {"h100-sxm-80gb": "DGX-H100", "gb200": "DGX-GB200"}


def _rows() -> dict[str, dict[str, str]]:
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def _archive_lines() -> list[tuple[str, str, list[str]]]:
    """(release heading, the nearest model/system heading, cells) of every table row."""
    out, release, heading = [], "", ""
    for line in mirror_source(*ARCHIVE).splitlines():
        if line.startswith("## "):
            release, heading = line[3:].strip(), ""
        elif line.startswith("#### "):
            heading = line[5:].strip()
        elif line.startswith("|") and not line.startswith("|-"):
            out.append((release, heading, [c.strip() for c in line.strip("|").split("|")]))
    return out


def test_every_published_speed_is_in_the_archive_under_its_release():
    """Each (workload, release, GBS, tokens/s/GPU) the script reads is a row of that release's
    table in the archive, on the workload's system, model and GPU count."""
    rows, lines = _rows(), _archive_lines()
    for rid, release, gbs, tps in SCRIPT.RELEASES:
        row = rows[rid]
        model = MODEL_KEY[row["model"]]
        system = next(v for k, v in SYSTEM_KEY.items() if row["gpu"].startswith(k))
        hits = [cells for rel, head, cells in lines
                if rel == f"{release} NeMo Container"
                and any(model in t for t in (head, *cells))
                and any(system in t for t in (head, *cells))
                and row["num_gpus"] in cells and str(gbs) in cells
                and any(c.split(" ")[0] == str(tps) for c in cells)]
        assert hits, (rid, release, gbs, tps)


def test_the_workload_rows_share_their_shape_across_releases():
    """The script prices one row per workload at each release's batch: the public rows of the
    other release must be that workload (same model, GPUs, layout, micro-batch, precision)."""
    rows = _rows()
    same = ("model", "gpu", "num_gpus", "tp", "pp", "cp", "ep", "vpp", "seq_length", "dtype",
            "fp8_recipe")
    for other, rid in (("bridge2511-qwen3-235b-a22b-h100-256-gbs2048", SCRIPT.QWEN),
                       ("bridge2511-llama3.1-405b-1024",
                        "bridge2604p1-llama3.1-405b-h100-1024-gbs1536")):
        a, b = rows[other], rows[rid]
        assert [a[c] for c in same] == [b[c] for c in same], other
        assert (a["micro_batch_size"] or "1") == (b["micro_batch_size"] or "1")
    listed = {(rid, rel): gbs for rid, rel, gbs, _ in SCRIPT.RELEASES}
    assert listed[(SCRIPT.QWEN, "25.11")] == int(
        rows["bridge2511-qwen3-235b-a22b-h100-256-gbs2048"]["global_batch_size"])


def test_recipe_cells_come_from_the_errata_file():
    """The Qwen3-235B recipe cells are the errata's (all-to-all dispatcher with the expert
    all-to-all overlap, Bridge v0.2.0-v0.4.2); a row without errata comes back unchanged."""
    rows = _rows()
    fixed = SCRIPT.recipe_row(rows[SCRIPT.QWEN])
    assert fixed["moe_dispatcher"] == "alltoall"
    assert "ep_overlap" in fixed["options"].split(";")
    assert {k: v for k, v in fixed.items() if k not in ("moe_dispatcher", "options")} == \
        {k: v for k, v in rows[SCRIPT.QWEN].items() if k not in ("moe_dispatcher", "options")}
    plain = rows["bridge2511-llama3-70b-64"]  # no erratum names it
    assert SCRIPT.recipe_row(plain) == plain
