"""torcheager60 (2026-11-29): PyTorch's own ZeRO-1, torch.distributed.optim.ZeroRedundancyOptimizer
over DistributedDataParallel (``data_parallel_impl`` ddp, zero_stage 1; the pytorch profile from
torch 1.8): DDP's whole-gradient all-reduce as at stage 0, the wrapped optimizer over the rank's
own whole tensors (torch's greedy partition), then one fp32 broadcast per parameter tensor from
its owner, not overlapped (``workload.zero1_broadcast``); and GPT-2's learned position table
among the gradient tensors (``workload.sharding._grad_tensors``). RESULTS.md "60th session,
torcheager60"."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from helpers import CommRecorder
from helpers_files import training_rows

from trainsim.memory.state import model_state
from trainsim.pricing import Pricer
from trainsim.simulator import build_tasks
from trainsim.validate.training import predict_training_row, row_config
from trainsim.workload.grad_accumulation import AUTOGRAD_FP32_ADD, fp32_grad_accumulation
from trainsim.workload.sharding import _grad_tensors
from trainsim.workload.zero1_broadcast import busiest_owner, owner_tensors, stage_tensors

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "benchmarks" / "training_flashattn.csv"
A100 = "flashattn-lambda-hf-gpt3-2.7b-a100-1"


def _row(**change: str) -> dict[str, str]:
    """Lambda's HF GPT-2 2.7B row (plain PyTorch, fp16 autocast, fp32 state), as changed."""
    return dict(next(r for r in training_rows(FLASH) if r["id"] == A100), **change)


def _eight(zero: str, version: str = "1.14") -> dict[str, str]:
    return _row(num_gpus="8", zero_stage=zero, framework_version=version)



def test_the_partition_is_torch_s_own():
    """``owner_tensors`` gives each rank the tensors torch's own
    ``ZeroRedundancyOptimizer._partition_parameters`` gives it (run on an instance without a
    process group: world size and one parameter group set by hand), on random sizes."""
    torch = pytest.importorskip("torch")
    zro = pytest.importorskip("torch.distributed.optim.zero_redundancy_optimizer")
    rng = random.Random(60)
    for _ in range(40):
        sizes = [rng.choice([1, 7, 64, 300, 4096, 5000]) for _ in range(rng.randint(1, 30))]
        world = rng.randint(1, 9)
        z = object.__new__(zro.ZeroRedundancyOptimizer)
        z.world_size = world
        z.param_groups = [{"params": [torch.nn.Parameter(torch.empty(n)) for n in sizes]}]
        z._partition_parameters_cache = []
        theirs = [[p.numel() for g in rank for p in g["params"]]
                  for rank in zro.ZeroRedundancyOptimizer._partition_parameters(z)]
        assert [[int(n) for n in own] for own in owner_tensors(sizes, world)] == theirs


def test_zero1_is_accepted_and_selects_the_mechanisms():
    """Refused before this session (no engine); now DDP's stage 1: the whole-gradient
    all-reduce, broadcasts after the step, the row's dp_overlap overlapping the reduction only
    (ZeroRedundancyOptimizer.step waits for its broadcasts)."""
    p = row_config(_eight("1")).parallel
    assert (p.data_parallel_impl, p.zero_stage, p.zero1_grad_reduce, p.zero1_param_sync,
            p.overlap_grad_reduce, p.overlap_param_gather) == \
        ("ddp", 1, "all_reduce", "broadcast", True, False)
    res = predict_training_row(_eight("1", "1.7"))
    assert res.error is not None and "first shipped in pytorch 1.8" in res.error


def test_the_collectives_of_a_step():
    """8 ranks: DDP's gradient buckets all-reduced in fp32 as at stage 0, then one fp32
    broadcast per parameter tensor (GPT-2: 32 x 12 layer tensors, the word and the position
    embedding, the final norm's two), each its tensor's bytes, and no all-gather."""
    c = row_config(_eight("1"))
    pricer = CommRecorder(c)
    tasks, ends = build_tasks(c, pricer)
    kinds = {(op.name, op.kind) for op in pricer.comms}
    assert ("grad_reduce", "all_reduce") in kinds
    assert not any(op.kind in ("reduce_scatter", "all_gather") for op in pricer.comms)
    dense, experts = stage_tensors(c, range(32), True, True)
    assert not experts and len(dense) == 32 * 12 + 4
    sent = [op for op in pricer.comms if op.name == "param_broadcast"]
    assert sorted(op.bytes for op in sent) == sorted(4.0 * n for n in dense)
    last = tasks[ends[0]]
    assert last.label.startswith("param broadcast dp_cp after the step: 388 tensors")
    zero0 = row_config(_eight("0"))
    assert not any(op.name == "param_broadcast" for op in CommRecorder(zero0).comms)


def test_memory_shards_the_optimizer_state_by_whole_tensors():
    """The moments (8 bytes a parameter, Adam in fp32) of the busiest owner's tensors only:
    about 1/8 of 2.65 G parameters on 8 ranks (the word embedding, 129 M, is one rank's);
    parameters, gradients and DDP's buckets stay whole."""
    z0, z1 = row_config(_eight("0")), row_config(_eight("1"))
    s0, s1 = model_state(z0, 0), model_state(z1, 0)
    share, _ = busiest_owner(z1, 0)
    assert 1 / 8 <= share < 1 / 8 + 0.01
    assert s1.optimizer == pytest.approx(s0.optimizer * share)
    assert (s1.weights, s1.gradients, s1.persistent) == (s0.weights, s0.gradients, s0.persistent)
    saved = (predict_training_row(_eight("0")).predicted_memory_gib
             - predict_training_row(_eight("1")).predicted_memory_gib) * 2**30
    assert saved == pytest.approx(s0.optimizer * (1 - share), rel=0.02)


def test_the_step_and_its_broadcasts_price_the_iteration():
    """The step updates the busiest owner's eighth (the for-loop Adam of torch 1.14 over its
    tensors); the broadcasts of 2.65 G fp32 parameters (10.6 GB) over NVLink follow it, nothing
    beside them: against stage 0 the iteration moves by exactly the step's saving less the
    broadcasts (0.150 - 0.018 - 0.054 s on A100)."""
    def parts(zero):
        c = row_config(_eight(zero))
        tasks, ends = build_tasks(c, Pricer(c))
        step = next(t.duration_s for t in tasks if t.label == "optimizer step")
        last = tasks[ends[0]]
        sent = last.duration_s if last.label.startswith("param broadcast") else 0.0
        return predict_training_row(_eight(zero)).predicted, step, sent

    (t0, step0, sent0), (t1, step1, sent1) = parts("0"), parts("1")
    assert sent0 == 0.0 and step1 < step0 / 7
    assert 10.6e9 / sent1 < 300e9  # below A100 NVLink's bus bandwidth
    assert t0 - t1 == pytest.approx(step0 - step1 - sent1, rel=1e-6)


def test_autograd_adds_into_ddp_s_grad_at_stage_1_too():
    """ZeroRedundancyOptimizer steps DDP's own ``.grad``: autograd's fp32 ``+=`` runs at stage
    1 as at 0 (before: nothing)."""
    c = row_config(_eight("1"))
    ops = fp32_grad_accumulation(c, range(32), True, True)
    assert [op.name for op in ops] == [AUTOGRAD_FP32_ADD]
    zero0 = fp32_grad_accumulation(row_config(_eight("0")), range(32), True, True)
    assert ops == zero0


def test_the_position_table_has_a_gradient():
    """GPT-2's ``wpe`` (2048 x 2560 on the 2.7B preset) is among the first stage's gradient tensors
    (autograd's fp32 ``.grad +=`` adds into it: gelu60 Lead 3); not on a later stage, nor for
    a RoPE model."""
    c = row_config(_row())
    first = _grad_tensors(c, range(2), True, False)
    later = _grad_tensors(c, range(2), False, False)
    assert len(first) == len(later) + 2  # the word embedding and the position table
    wpe = float(c.model.max_position_embeddings * c.model.hidden_size)
    assert wpe == 2048.0 * 2560 and wpe in first and wpe not in later
    rope = dataclasses.replace(c, model=dataclasses.replace(c.model, position_embedding="rope"))
    assert len(_grad_tensors(rope, range(2), True, False)) == len(later) + 1
