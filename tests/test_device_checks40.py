"""benchmarks/device_checks40.py without a GPU: its plan, the shapes it times, and the kernels CSV
committed from its H200 run is exactly what its ``--from-json`` rebuilds from the saved JSON, in
rows whose notes ``trainsim validate`` reads as block-scaled where they were."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest

from trainsim.validate.kernels import block_scales

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
RUN1 = BENCH / "h200_2026-11-27_s40" / "run1_device_checks40.json"
CSV = BENCH / "kernels_h200_dsv3_measured.csv"


@pytest.fixture(scope="module")
def dc40():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("device_checks40", BENCH / "device_checks40.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_lists_every_section(dc40, capsys):
    assert dc40.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in dc40.SECTIONS)
    with pytest.raises(SystemExit):
        dc40.main(["--dry-run", "--sections", "dsv3_gemms,nope"])


def test_products_are_the_three_passes_of_a_linear(dc40):
    """fwd (tokens, out, in), dgrad (tokens, in, out), wgrad (out, in, tokens): one FLOP count."""
    p = dc40.products("expert_fc1")
    assert p == {"fwd": (8704, 4096, 7168), "dgrad": (8704, 7168, 4096),
                 "wgrad": (4096, 7168, 8704)}
    assert len({m * n * k for m, n, k in p.values()}) == 1


def test_committed_csv_is_rebuilt_from_the_run_json(dc40, tmp_path):
    out = tmp_path / "k.csv"
    assert dc40.main(["--from-json", str(RUN1), "--out", str(out)]) == 0
    assert out.read_text() == CSV.read_text()
    rows = list(csv.DictReader(CSV.open()))
    assert len(rows) == 81  # 9 linears x 3 passes x (bf16, fp8 per-tensor, fp8 block-scaled)
    blocked = [r for r in rows if r["id"].endswith("fp8-block")]
    assert len(blocked) == 27
    # cuBLASLt promotes between blocks; the weight gradients' 1x128-by-1x128 scales per element
    assert all(block_scales(r) == ("outer" if "-wgrad-" in r["id"] else "serial")
               for r in blocked)
    assert not any(block_scales(r) for r in rows if not r["id"].endswith("fp8-block"))
