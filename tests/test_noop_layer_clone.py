"""The legacy Megatron model's NoopTransformerLayer: a chunk left with no transformer layer
clones its input (NVIDIA/Megatron-LM@1fa6990c49, 2022-01-31; megatron/model/transformer.py),
until Megatron-core's model became the default (2024-06 entry, 53f901c662)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import trainsim.chunks as chunks_mod
from tests.helpers import load_script
from trainsim.chunks import chunks, noop_layer_clone
from trainsim.pricing import Pricer
from trainsim.workload.shard import shard_of

ZB = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "zero_bubble.py")
ROW = {"model": "1.5B", "num_layers": "22", "num_attention_heads": "24", "hidden_size": "2304",
       "seq_length": "1024", "num_gpus": "8", "gpus_per_node": "8", "micro_batch_size": "6",
       "num_microbatches": "24", "schedule": "1F1B-I"}


def _cfg(version: str, schedule: str = "1F1B-I"):
    cfg = ZB.config({**ROW, "schedule": schedule})
    return replace(cfg, training=replace(cfg.training, framework_version=version))


def _forwards(cfg, monkeypatch=None):
    if monkeypatch is not None:
        monkeypatch.setattr(chunks_mod, "noop_layer_clone", lambda cfg, sh: [])
    ch = chunks(cfg, Pricer(cfg), shard_of(cfg), None)
    return [ch[v].fwd.duration_s for v in sorted(ch)]


def test_the_empty_chunks_of_a_padded_interleaved_run_clone_their_input(monkeypatch):
    cfg = _cfg("2023-11")
    ranges = cfg.virtual_stage_layers()
    assert [v for v, r in enumerate(ranges) if not r] == [0, len(ranges) - 1]
    sh = shard_of(cfg)
    (op,) = noop_layer_clone(cfg, sh)
    assert op.bytes == 2 * 2 * sh.tokens * cfg.model.hidden_size  # a 16-bit read and write
    clone_s = Pricer(cfg).price([op]).duration_s
    assert 0 < clone_s < 1e-4  # a 28 MB copy: tens of microseconds
    with_clone = _forwards(cfg)
    without = _forwards(cfg, monkeypatch)
    added = [a - b for a, b in zip(with_clone, without)]
    assert added[0] == pytest.approx(clone_s) and added[-1] == pytest.approx(clone_s)
    assert all(x == pytest.approx(0.0, abs=1e-15) for x in added[1:-1])


@pytest.mark.parametrize("version", ["2021-09", "2024-06"])
def test_before_the_no_op_layer_and_under_megatron_core_no_clone(version):
    cfg = _cfg(version)
    assert noop_layer_clone(cfg, shard_of(cfg)) == []


def test_chunks_with_layers_have_no_clone(monkeypatch):
    cfg = _cfg("2023-11", "1F1B")
    assert all(cfg.virtual_stage_layers())
    assert _forwards(cfg) == _forwards(cfg, monkeypatch)
