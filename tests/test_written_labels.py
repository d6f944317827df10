"""A parallel degree written with its column's label (``TP2``) and an InfiniBand generation as a
NIC rate (``NDR``) are read as the plain numbers (validate.written), end to end the same prediction
as the row written plainly, the reading printed; another column's label stays refused."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.validate.training import predict_training_row
from trainsim.validate.written import IB_GBPS, plain_number

PUBLIC = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation" / \
    "training_public.csv"


@pytest.mark.parametrize(("column", "text", "plain"), [
    ("tp", "TP2", "2"), ("tp", "tp = 4", "4"), ("pp", "PP8", "8"), ("vpp", "VP 5", "5"),
    ("vpp", "VPP5", "5"), ("cp", "CP:2", "2"), ("ep", "EP16", "16"), ("dp", "DP64", "64"),
    ("nic_gbps_per_gpu", "NDR", "400"), ("nic_gbps_per_gpu", "HDR", "200"),
    ("nic_gbps_per_gpu", "InfiniBand XDR", "800"), ("nic_gbps_per_gpu", "EDR", "100"),
    ("nic_gbps_per_gpu", "NDR200", "200"),  # a split port at its written rate
])
def test_labels_read(column: str, text: str, plain: str) -> None:
    assert plain_number(column, text) == (plain, True)


@pytest.mark.parametrize(("column", "text"), [
    ("tp", "PP8"), ("pp", "TP2"), ("nic_gbps_per_gpu", "QDR"), ("tp", "TP"), ("num_gpus", "TP8"),
])
def test_other_labels_left_for_the_column_check(column: str, text: str) -> None:
    assert plain_number(column, text) == (text, False)


def test_ib_rates_are_the_ibta_4x_port_rates() -> None:
    # each generation doubles the last (EDR 25, HDR 50, NDR 100, XDR 200 Gb/s a lane, 4 lanes)
    assert [IB_GBPS[g] for g in ("edr", "hdr", "ndr", "xdr")] == [100, 200, 400, 800]


def test_labelled_row_predicts_as_the_plain_row() -> None:
    with PUBLIC.open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["id"] == "nemo2407-llama2-13b-16")
    assert (row["tp"], row["pp"], row["vpp"], row["nic_gbps_per_gpu"]) == ("1", "4", "10", "400")
    plain = predict_training_row(dict(row), compute_db=None)
    labelled = predict_training_row(dict(row, tp="TP1", pp="PP 4", vpp="VP10",
                                         nic_gbps_per_gpu="NDR"), compute_db=None)
    assert plain.error is None and labelled.error is None
    assert labelled.predicted == plain.predicted
    read = labelled.extra["read_as"]
    assert read["nic_gbps_per_gpu"] == "NDR -> 400" and read["pp"] == "PP 4 -> 4"
