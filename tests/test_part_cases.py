"""benchmarks/part_cases.py: the harness the *_parts.py diagnostics share reads back what each
case's process printed (a row without a prediction stays None)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import part_cases


def test_collect_runs_each_case_in_its_own_process(tmp_path: Path) -> None:
    script = tmp_path / "toy_parts.py"
    script.write_text(
        "import os, sys\n"
        "label, path = sys.argv[2], sys.argv[3]\n"
        "print(f'a,1.5,{2.0 if label == \"base\" else 3.0}')\n"
        "print(f'b,2.0,')\n"
        "print(f'pid,{os.getpid()},')\n")
    csv_file = tmp_path / "rows.csv"
    csv_file.write_text("id,measured_iteration_s\na,1.5\nb,2.0\n")
    got = part_cases.collect(str(script), ("base", "gemm"), csv_file)
    assert got["base"]["a"] == (1.5, 2.0)
    assert got["gemm"]["a"] == (1.5, 3.0)
    assert got["base"]["b"] == (2.0, None)
    assert got["base"]["pid"][0] != got["gemm"]["pid"][0]
    assert [r["id"] for r in part_cases.rows(csv_file)] == ["a", "b"]
