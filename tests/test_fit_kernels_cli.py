"""benchmarks/fit_kernels.py's command line: its report options each print one table and stop,
so asking for two is refused (``--by-seq`` used to return before ``--by-source`` was read)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "fit_kernels.py"


@pytest.fixture(scope="module")
def fit_kernels():
    spec = importlib.util.spec_from_file_location("fit_kernels", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fit_kernels"] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("fit_kernels", None)


@pytest.mark.parametrize("args", [["--by-seq", "--by-source"],
                                  ["--by-source", "gemm", "--by-seq"],
                                  ["--leave-one-source-out", "--by-seq"],
                                  ["--by-source", "--leave-one-source-out"]])
def test_two_report_options_are_one_usage_error_before_any_work(fit_kernels, args, capsys,
                                                                 monkeypatch):
    monkeypatch.setattr(fit_kernels, "load", lambda paths: pytest.fail("rows loaded"))
    with pytest.raises(SystemExit) as exc:
        fit_kernels.main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error: argument --" in err and "not allowed with argument --" in err
