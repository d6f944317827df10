"""DeepSpeed's PipelineEngine reduces the tied embedding gradients before the data-parallel
ones (microsoft/DeepSpeed v0.5.10, 3293cf72, deepspeed/runtime/pipe/schedule.py L235-237:
``ReduceTiedGrads``, ``ReduceGrads``, ``OptimizerStep``; engine.py L233-244, module.py
L416-420: a blocking all-reduce over the first and the last stage). So the last stage, done
with its backward passes first under 1F1B, waits for stage 0's last backward before its own
data-parallel reduction (``OptimizerTasks.tied_first``)."""

from __future__ import annotations

import pytest

from tests.test_ds_lockstep import cfg
from trainsim.engine import run
from trainsim.optimizer_tasks import OptimizerTasks
from trainsim.simulator import Pricer, build_graph


def _timeline(c, monkeypatch=None):
    if monkeypatch is not None:  # the order before: each stage's tied all-reduce on its own
        monkeypatch.setattr(OptimizerTasks, "tied_first", lambda self, last: {})
    graph = build_graph(c, Pricer(c))
    tl = run(graph.tasks)
    return graph.tasks, tl


def _last_compute_end(tasks, tl, s, before):
    return max(tl.end_s[i] for i, t in enumerate(tasks[:before]) if t.stream == (s, "compute"))


@pytest.mark.parametrize("last_layers", [None, 5])  # equal ends; a last stage 5 of 8 layers
def test_tied_all_reduce_meets_then_data_parallel(last_layers):
    kw = {} if last_layers is None else {"decoder_last_pipeline_num_layers": last_layers}
    c = cfg(pp=4, gbs=16, dp=2, **kw)
    assert c.model.tied_embeddings
    tasks, tl = _timeline(c)
    tied = {t.stream[0]: i for i, t in enumerate(tasks) if t.label == "tied embedding all-reduce"}
    assert sorted(tied) == [0, 3]
    first = min(tied.values())
    ends = {s: _last_compute_end(tasks, tl, s, first) for s in (0, 3)}
    assert ends[0] > ends[3]  # 1F1B: stage 0 runs the last backward
    for s, i in tied.items():  # both sides start together, once both stages are done
        assert tl.start_s[i] == pytest.approx(ends[0], rel=1e-12)
        assert tl.end_s[i] == pytest.approx(tl.end_s[tied[0]], rel=1e-12)
        grads = [j for j, t in enumerate(tasks) if t.stream[0] == s and t.label.startswith("grad ")]
        assert grads and all(tl.start_s[j] >= tl.end_s[i] - 1e-15 for j in grads)
    middle = [j for j, t in enumerate(tasks) if t.stream[0] == 1 and t.label.startswith("grad ")]
    assert all(tl.start_s[j] < ends[0] for j in middle)  # no tied group there: no wait


def test_heavier_last_stage_waits_for_stage_zero(monkeypatch):
    """A last stage with more gradient than the first: its reduction and step, no longer
    under stage 0's last backward passes, now end the iteration."""
    c = cfg(pp=4, gbs=16, dp=2, decoder_last_pipeline_num_layers=5)
    tasks, tl = _timeline(c)
    after = max(tl.end_s)
    stage_end = {s: max(tl.end_s[i] for i, t in enumerate(tasks) if t.stream[0] == s)
                 for s in range(4)}
    assert after == stage_end[3] > stage_end[0]
    old_tasks, old = _timeline(c, monkeypatch)
    assert after > max(old.end_s)
    old_end = {s: max(old.end_s[i] for i, t in enumerate(old_tasks) if t.stream[0] == s)
               for s in range(4)}
    assert old_end[3] < old_end[0]  # before: reduced in stage 0's shadow
    assert stage_end[0] == pytest.approx(old_end[0], rel=1e-12)


def test_megatron_keeps_its_order():
    """Other engines keep the order they had: the last stage's tied all-reduce runs after its
    own last backward, without waiting for stage 0."""
    c = cfg(pp=4, gbs=16, dp=2, data_parallel_impl="megatron")
    tasks, tl = _timeline(c)
    i = next(i for i, t in enumerate(tasks)
             if t.label == "tied embedding all-reduce" and t.stream[0] == 3)
    assert tl.start_s[i] < _last_compute_end(tasks, tl, 0, i)
