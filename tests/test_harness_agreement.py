"""The bundled H100 database and the independent H100 kernel file share GEMM shapes; their
disagreement is the floor under issue 24's GEMM target (benchmarks/harness_agreement.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "harness_agreement.py"


def test_both_h100_measurements_share_gemm_shapes_and_report_their_ratio(capsys):
    spec = importlib.util.spec_from_file_location("harness_agreement", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main([str(mod.BUNDLED)]) == 0
    out = capsys.readouterr().out
    for dtype in ("bf16", "fp8"):
        line = next(x for x in out.splitlines() if x.strip().startswith(dtype))
        shapes = int(line.split(":")[1].split()[0])
        assert shapes >= 100
