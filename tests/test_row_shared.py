"""A tuned row's candidates share one model and one cluster object and what their pricers
priced (``validate.training.row_shared``, 37th session): every figure of the row is the same
to the bit as with each candidate built and priced on its own."""

from __future__ import annotations

import csv
from contextlib import nullcontext

import pytest

from trainsim import pricing
from trainsim.catalog import run_config_from_dict
from trainsim.validate import BUNDLED_DIR, training
from trainsim.validate.row_settings import counts_checked, training_base, with_choice
from trainsim.validate.vocab import normalized_training_row

ROWS = ("megatron21-t1-39.1B", "mlm-weak-7.1b-96", "bridge2604p1-gpt-oss-120b-h100-64")
"""Three cheap public rows whose tuner builds 9-18 pricers: dense Megatron-LM (interleaved,
micro-batch tuned) and an MoE row on Megatron-Bridge."""


def _rows() -> dict[str, dict[str, str]]:
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh) if r["id"] in ROWS}


def _clusters_priced(monkeypatch: pytest.MonkeyPatch) -> list:
    """The clusters of every ``Pricer`` built from here on."""
    seen: list = []
    init = pricing.Pricer.__init__

    def counting(self, cfg, *args, **kwargs):
        seen.append(cfg.cluster)
        init(self, cfg, *args, **kwargs)

    monkeypatch.setattr(pricing.Pricer, "__init__", counting)
    return seen


@pytest.mark.parametrize("rid", [ROWS[0], *(pytest.param(r, marks=pytest.mark.slow)
                                         for r in ROWS[1:])])
def test_shared_rows_equal_rows_priced_alone(rid):
    """The row predicted with the sharing, then with ``row_shared`` a null context (every
    candidate its own cluster and prices, as before): the same JSON, chosen settings, memory
    and breakdown included; with the sharing every pricer of the row prices on one cluster."""
    row = _rows()[rid]
    with pytest.MonkeyPatch.context() as m:
        clusters = _clusters_priced(m)
        fast = training.predict_training_row(row)
    assert fast.error is None and fast.predicted
    assert len(clusters) > 3 and len({id(c) for c in clusters}) == 1
    with pytest.MonkeyPatch.context() as m:
        m.setattr(training, "row_shared", nullcontext)
        clusters = _clusters_priced(m)
        plain = training.predict_training_row(row)
    assert len({id(c) for c in clusters}) > 1  # the plain path: a cluster each
    assert fast.to_dict() == plain.to_dict()


def test_interned_takes_equal_parts_only():
    """Inside ``row_shared`` a config built again from the same cells takes the first one's
    model and cluster objects; one of another GPU count keeps its own cluster (and the
    model); outside, nothing is replaced."""
    row = normalized_training_row(_rows()["mlm-weak-7.1b-96"])[0]
    raw, unknown = training_base(counts_checked(row))
    choice = {k: v[0] for k, v in unknown.items()}

    def build(**cluster):
        data = with_choice(raw, choice)
        data = {**data, "cluster": {**data["cluster"], **cluster}}
        return training._interned(run_config_from_dict(data))

    with training.row_shared():
        a, b = build(), build()
        c = build(num_gpus=2 * a.cluster.num_gpus)
    assert b.cluster is a.cluster and b.model is a.model and b == a
    assert c.cluster is not a.cluster and c.cluster != a.cluster and c.model is a.model
    d = build()
    assert d.cluster is not a.cluster and d.cluster == a.cluster
