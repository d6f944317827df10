"""benchmarks/bridge_releases.py's inputs: the published speeds it reads against the archive
they were copied from, the workloads it treats as one, and the recipe cells it takes from the
errata file. No prediction is run here (the script is the check; these keep its inputs true)."""

from __future__ import annotations

import csv
from pathlib import Path

from helpers import load_script, mirror_source

from trainsim.validate import BUNDLED_DIR

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = load_script(ROOT / "benchmarks" / "bridge_releases.py")
ARCHIVE = ("NVIDIA-NeMo+Megatron-Bridge", "067f987df03b8355b03192d88d70f1709fedf51a",
           "docs/performance-summary-archive.md")
MODEL_KEY = {"llama3.1-405b": "LLAMA3.1_405B", "llama3-70b": "LLAMA3_70B",
             "qwen3-235b-a22b": "Qwen3_235B_a22B"}
SYSTEM_KEY = {"h100-sxm-80gb": "DGX-H100", "gb200": "DGX-GB200", "b200-sxm-180gb": "DGX-B200"}
# the archive's Precision cell for a row's fp8_recipe: its tables write per-tensor current scaling
# "FP8-CS" (25.11) or "FP8" (26.02 on, beside "MXFP8" and "NVFP4"); 25.09's tables state none
# (an empty fp8_recipe, the format's "not stated", admits the per-tensor cells, not MXFP8/NVFP4)
PRECISION = {"current": {"FP8", "FP8-CS"}, "": {"FP8", "FP8-CS"}, "mxfp8": {"MXFP8", "FP8-MX"}}
LAYOUT = {"TP": "tp", "PP": "pp", "CP": "cp", "VP": "vpp", "EP": "ep"}


def _rows() -> dict[str, dict[str, str]]:
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def _archive_lines() -> list[tuple[str, str, dict[str, str]]]:
    """(release heading, the nearest model/system heading, {column: cell}) of every table row."""
    out, release, heading, header = [], "", "", []
    for line in mirror_source(*ARCHIVE).splitlines():
        if line.startswith("## "):
            release, heading = line[3:].strip(), ""
        elif line.startswith("#### "):
            heading = line[5:].strip()
        elif line.startswith("|") and not line.startswith("|-"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] in ("Model", "System"):
                header = cells
            else:
                out.append((release, heading, dict(zip(header, cells))))
    return out


def _first(cell: str) -> str:
    """A cell's value (25.09/25.11 put an alternative recipe's value in parentheses after it)."""
    return cell.split(" ")[0]


def _same_layout(row: dict[str, str], cells: dict[str, str]) -> bool:
    """TP/PP/CP/VP/EP of the archive row equal the public row's ("n/a" and empty read as 1)."""
    def norm(v: str) -> str:
        return "1" if v in ("", "n/a") else v
    return all(norm(_first(cells[k])) == norm(row[c]) for k, c in LAYOUT.items())


def _matches(row: dict[str, str], release: str, gbs: int, tps: int,
             rel: str, head: str, cells: dict[str, str]) -> bool:
    """Whether one archive table row is the workload's entry for that release and speed."""
    model, system = MODEL_KEY[row["model"]], next(
        v for k, v in SYSTEM_KEY.items() if row["gpu"].startswith(k))
    precision = cells.get("Precision")
    return (rel == f"{release} NeMo Container"
            and (cells.get("Model") == model or head == f"Model: {model}")
            and (cells.get("System") == system or head == f"System: {system}")
            and (precision is None or _first(precision) in PRECISION[row["fp8_recipe"]])
            and _same_layout(row, cells)
            and cells["#-GPUs"] == row["num_gpus"] and cells["GBS"] == str(gbs)
            and _first(cells["Tokens / sec / GPU"]) == str(tps))


def test_every_published_speed_is_in_the_archive_under_its_release():
    """Each (workload, release, GBS, tokens/s/GPU) the script reads is a row of that release's
    table in the archive, on the workload's system, model (exactly: no "(tokendrop)" variant),
    GPU count, precision and TP/PP/CP/VP/EP."""
    rows, lines = _rows(), _archive_lines()
    for rid, release, gbs, tps in SCRIPT.RELEASES:
        row = rows[rid]
        assert row["dtype"] == "fp8", rid
        hits = [c for rel, head, c in lines if _matches(row, release, gbs, tps, rel, head, c)]
        assert len(hits) == 1, (rid, release, gbs, tps, hits)
        assert "(tokendrop)" not in hits[0].get("Model", ""), (rid, release)


def test_the_archive_check_rejects_a_neighbouring_entry():
    """The matcher is not loose: the GB200 405B MXFP8 speed of 26.02 (786, VP 8), the FP8 row's
    neighbour, and a tokendrop Qwen3-235B entry of 25.09 (1204) are not the workloads' rows."""
    rows, lines = _rows(), _archive_lines()
    gb200 = rows["bridge2604p1-llama3.1-405b-gb200-256"]
    assert not [c for rel, head, c in lines if _matches(gb200, "26.02", 1536, 786, rel, head, c)]
    assert [c for rel, head, c in lines if _matches(gb200, "26.02", 1536, 793, rel, head, c)]
    qwen = rows[SCRIPT.QWEN]
    assert not [c for rel, head, c in lines if _matches(qwen, "25.09", 2048, 1204, rel, head, c)]


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
    assert ({k: v for k, v in fixed.items() if k not in ("moe_dispatcher", "options")}
            == {k: v for k, v in rows[SCRIPT.QWEN].items() if k not in ("moe_dispatcher", "options")})
    plain = rows["bridge2511-llama3-70b-64"]  # no erratum names it
    assert SCRIPT.recipe_row(plain) == plain


def test_release_floor_takes_the_best_common_factor():
    """One workload's errors +5 % and +10 %: a common factor can null either, not both; nulling
    the slower point leaves the other at 1.05 / 1.10 - 1 (the smaller of the two choices); a
    single point can always be nulled."""
    now, floor = SCRIPT.release_floor([0.05, 0.10])
    assert abs(now - 0.075) < 1e-12
    assert abs(floor - (1 - 1.05 / 1.10) / 2) < 1e-12 < (1.10 / 1.05 - 1) / 2 - floor
    assert SCRIPT.release_floor([-0.098])[1] < 1e-12


def test_gap_split_counts_samples_and_micro_batches_per_gpu():
    """The Bridge GB200 FSDP row (GBS 256 over DP 64 at MBS 2): 4 samples, 2 micro-batches."""
    row = _rows()[SCRIPT.FSDP]
    g = SCRIPT.gap_split(row, 7.7576, 7.0576)
    assert (g["samples"], g["micro_batches"]) == (4.0, 2.0)
    assert abs(g["per_micro_batch"] - 0.35) < 1e-9 and abs(g["per_sample"] - 0.175) < 1e-9
    with open(SCRIPT.NEMO_PERF, newline="") as fh:
        nemo = {r["id"]: r for r in csv.DictReader(fh)}
    for rid in SCRIPT.NEMO_FSDP:  # the NeMo comparators are the same workload at MBS 1
        r = nemo[rid]
        assert (r["model"], r["gpu"], r["num_gpus"], r["tp"], r["pp"], r["zero_stage"],
                r["micro_batch_size"]) == ("llama3-70b", "gb200", "64", "1", "1", "3", "1"), rid
