"""The check-file generators' shared format-v2 header (benchmarks/mirror_rows.py ``v2_header``)."""

import csv
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
MIRROR_ROWS = load_script(ROOT / "benchmarks" / "mirror_rows.py")


def test_extra_columns_follow_the_column_that_names_them():
    h = MIRROR_ROWS.v2_header(moe_ffn_hidden_size=["mtp_num_layers"], note=["a", "b"])
    assert h[h.index("moe_ffn_hidden_size") + 1] == "mtp_num_layers"
    assert h[-3:] == ["note", "a", "b"]
    assert [c for c in h if c not in ("mtp_num_layers", "a", "b")] == list(MIRROR_ROWS.V2_COLUMNS)


def test_an_unknown_anchor_column_is_refused():
    with pytest.raises(ValueError, match="no column"):
        MIRROR_ROWS.v2_header(nots=["x"])


@pytest.mark.parametrize("name", ["dgxc2505", "dsv3_gb200_ladder", "launcher_table",
                                  "mlperf51_partner", "moe_modelzoo", "zeropp"])
def test_each_generator_header_is_its_committed_files_header(name):
    gen = load_script(ROOT / "benchmarks" / f"{name}_rows.py")
    committed = {p: next(csv.reader(p.open())) for p in (ROOT / "benchmarks").glob("training_*.csv")}
    assert list(gen.HEADER) in committed.values()
