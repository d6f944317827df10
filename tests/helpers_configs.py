"""Configs several test modules build: the tiny search base, a DGX H100 run, the validator's
overlap flags of a row, fp8 and one-layer MoE configs and their ops, random configs, the
steady-state proofs' inputs, a Hugging Face config read, pipelined configs."""

from __future__ import annotations

import contextlib
import dataclasses
import random
from pathlib import Path

import pytest

import trainsim
from trainsim.catalog import gpu, model
from trainsim.config import ClusterConfig, ModelConfig, ParallelConfig, RunConfig, TrainingConfig
from trainsim.pricing import Pricer

# ---------------------------------------------------------------------------- search

TINY_MODEL = {"name": "tiny", "hidden_size": 1024, "num_layers": 8, "num_attention_heads": 16,
              "num_kv_heads": 4, "vocab_size": 32000, "activation": "swiglu",
              "position_embedding": "rope", "normalization": "rmsnorm",
              "tied_embeddings": False, "add_bias_linear": False}

SMALL_RUN = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                       "vocab_size": 1024},
             "parallel": {}, "training": {"global_batch_size": 16, "micro_batch_size": 1,
                                          "seq_length": 512},
             "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                         "compute_db": None}}
"""A run config as a user writes it (a 4-layer model on one node), for the robustness rounds:
deep-copy it before changing it."""


def make_base(model=TINY_MODEL, gpus=16, batch=32, seq=2048, gpu="h100-sxm-80gb", dtype="bf16",
              **cluster):
    """A search base: ``model`` on ``gpus`` GPUs (8 per node), global batch ``batch``."""
    from trainsim.search import Base

    cfg = trainsim.run_config_from_dict({
        "model": model, "training": {"global_batch_size": gpus, "seq_length": seq, "dtype": dtype},
        "cluster": {"gpu": gpu, "num_gpus": gpus, "gpus_per_node": 8, **cluster}})
    return Base(cfg.model, dataclasses.replace(cfg.training, global_batch_size=batch), cfg.cluster)


# ---------------------------------------------------------------------------- validation rows

def dgx_h100_run(framework, attention=None, name="gemma-2-2b", seq=4096, **model_changes):
    """A one-node DGX H100 run of the preset ``name`` (with ``model_changes``) at batch 8,
    micro-batch 1, sequence ``seq`` on ``framework``, ``attention`` if given."""
    training = {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": seq,
                "framework": framework}
    if attention:
        training["attention"] = attention
    m = ({**dataclasses.asdict(model(name)), **model_changes}
         if model_changes else name)
    return trainsim.run_config_from_dict({"model": m, "training": training,
                                          "cluster": {"node": "dgx-h100", "num_gpus": 8}})


def overlaps(row: dict[str, str], **cells: str) -> tuple[bool, bool, bool, bool]:
    """(grad reduce, param gather, p2p, TP) overlap of ``row`` with ``cells`` changed, as the
    validator reads it."""
    from trainsim.validate.row_settings import training_base

    raw, _ = training_base({**row, **cells})
    p = raw["parallel"]
    return (p["overlap_grad_reduce"], p["overlap_param_gather"], p["overlap_p2p_comm"],
            p["tp_comm_overlap"])


# ---------------------------------------------------------------------------- MoE layers

FP8_SLICE = (4096, 16384, 2048, 4)
"""The fp8 slices of tests/test_fp8_*: hidden, ffn (GeLU), tokens of one sequence, TP."""


def fp8_slice_cfg(recipe: str = "delayed", framework: str | None = "mlperf-nemo",
                  version: str | None = "4.0", gpu_name: str = "h100-sxm-80gb",
                  sp: bool = True, *, gpus: int = 8, pp: int = 1, batch: int = 16,
                  dtype: str = "fp8", cuda_graphs: bool = False) -> RunConfig:
    """One GeLU model of the ``FP8_SLICE`` shape (in ``dtype``, fp8 unless told) on ``gpus``
    GPUs, 8 a node, TP with or without sequence parallelism, ``pp`` pipeline stages, global
    batch ``batch``."""
    h, f, t, tp = FP8_SLICE
    model = ModelConfig(name="m", hidden_size=h, num_layers=8, num_attention_heads=32,
                        ffn_hidden_size=f, activation="gelu", normalization="layernorm",
                        position_embedding="learned", vocab_size=32768)
    training = TrainingConfig(global_batch_size=batch, micro_batch_size=1, seq_length=t,
                              dtype=dtype, fp8_recipe=recipe, framework=framework,
                              framework_version=version, cuda_graphs=cuda_graphs)
    parallel = ParallelConfig(tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp,
                              sequence_parallel=sp)
    cluster = ClusterConfig(gpu=gpu(gpu_name), num_gpus=gpus, gpus_per_node=8)
    return RunConfig(model=model, parallel=parallel, training=training, cluster=cluster)


def moe_layer_cfg(dispatcher: str = "alltoall", ep: int = 16, framework: str | None = None,
                  version: str | None = None, *, experts: int = 64, topk: int = 8,
                  gpus: int = 16, dtype: str = "bf16", **parallel) -> RunConfig:
    """One MoE layer (``experts`` experts, top ``topk``, h 1024) on ``gpus`` H100, expert
    parallel ``ep``; ``parallel``: more ``ParallelConfig`` fields."""
    model = ModelConfig(name="m", hidden_size=1024, num_layers=1, num_attention_heads=8,
                        ffn_hidden_size=512, activation="swiglu", num_experts=experts,
                        moe_router_topk=topk, moe_ffn_hidden_size=512)
    cluster = ClusterConfig(gpu=gpu("h100-sxm-80gb"), num_gpus=gpus,
                            gpus_per_node=min(8, gpus))
    training = TrainingConfig(global_batch_size=gpus, micro_batch_size=1, seq_length=1024,
                              framework=framework, framework_version=version, dtype=dtype)
    return RunConfig(model=model, training=training, cluster=cluster,
                     parallel=ParallelConfig(expert_model_parallel_size=ep,
                                             moe_token_dispatcher_type=dispatcher, **parallel))


@contextlib.contextmanager
def counted_graphs():
    """The task counts of the graphs ``steady_state`` builds inside the block (a list that
    fills as they are built)."""
    import trainsim.steady_state as steady

    built: list[int] = []
    real = steady.build_graph

    def counting(*args, **kw):
        g = real(*args, **kw)
        built.append(len(g.tasks))
        return g

    steady.build_graph = counting
    try:
        yield built
    finally:
        steady.build_graph = real


def moe_layer_ops(cfg: RunConfig) -> tuple[list, list]:
    """(forward, backward) ops of ``cfg``'s MoE block on one rank."""
    from trainsim.workload.layers import backward_of
    from trainsim.workload.moe_block import moe_block
    from trainsim.workload.shard import shard_of

    sh = shard_of(cfg)
    fwd: list = []
    moe_block(fwd, cfg, sh)
    return fwd, backward_of(fwd, sh)


def layer_ops(cfg: RunConfig) -> tuple[dict, list]:
    """(forward ops of ``cfg``'s transformer layer on one rank by name, backward ops)."""
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    return {op.name: op for op in fwd}, backward_of(fwd, sh)


# ---------------------------------------------------------------------------- random configs

def random_config(rng: random.Random) -> dict:
    """A small valid-looking config with a long pipeline steady phase and random switches."""
    pp = rng.choice([1, 2, 2, 4, 4, 8])
    vpp = rng.choice([1, 1, 2, 3]) if pp > 1 else 1
    tp, dp, cp = rng.choice([1, 2, 4]), rng.choice([1, 2, 4]), rng.choice([1, 1, 2])
    heads = 16
    moe = rng.random() < 0.2
    mbs = rng.choice([1, 2])
    micro = pp * rng.randint(20, 32) if vpp > 1 else rng.randint(8 * pp + 16, 12 * pp + 64)
    layers = pp * vpp * rng.randint(1, 3)
    model = {"name": "tiny", "hidden_size": 64 * heads, "num_layers": layers,
             "num_attention_heads": heads, "num_kv_heads": rng.choice([4, 16]),
             "vocab_size": rng.choice([32000, 50257]), "activation": rng.choice(["gelu", "swiglu"]),
             "tied_embeddings": rng.random() < 0.3}
    parallel = {"tp": tp, "pp": pp, "cp": cp, "vpp": vpp if vpp > 1 else None,
                "sequence_parallel": tp > 1 and rng.random() < 0.7,
                "recompute": rng.choice(["none", "selective", "full"]),
                "zero_stage": rng.choice([0, 0, 1, 2, 3]),
                "distributed_optimizer": rng.random() < 0.5,
                "overlap_grad_reduce": rng.random() < 0.6,
                "overlap_param_gather": rng.random() < 0.5,
                "overlap_p2p_comm": rng.random() < 0.5,
                "tp_comm_overlap": rng.random() < 0.3}
    if rng.random() < 0.15:
        parallel["optimizer_post_validation"] = True
    if moe:
        model.update(num_experts=8, moe_router_topk=2, moe_ffn_hidden_size=2048)
        parallel["ep"] = rng.choice([e for e in (1, 2, 4) if (tp * cp * dp) % e == 0])
    gpus = tp * pp * cp * dp
    training = {"global_batch_size": micro * mbs * dp, "micro_batch_size": mbs,
                "seq_length": 1024 * cp, "optimizer": rng.choice(["adam", "adam", "lamb"])}
    cluster = {"gpu": rng.choice(["h100-sxm-80gb", "a100-sxm-80gb"]), "num_gpus": gpus,
               "gpus_per_node": min(8, gpus), "compute_db": None}
    return {"model": model, "parallel": parallel, "training": training, "cluster": cluster}


# ------------------------------------------------------------- the steady-state proofs' inputs
def random_valid_configs(seed: int, n: int, draw=None) -> list:
    """``n`` valid configs from ``draw(rng)`` (``random_config`` unless given) seeded with
    ``seed``, the ones the config check refuses skipped."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.errors import ConfigError

    rng = random.Random(seed)
    out: list = []
    while len(out) < n:
        try:
            out.append(run_config_from_dict((draw or random_config)(rng)))
        except ConfigError:
            continue
    return out


def random_and_public_configs(seed: int, n: int) -> list:
    """``n`` random valid configs (``random_config`` from ``seed``, refused ones skipped), then
    every public training row's untuned config that builds (no kernel database)."""
    from trainsim.errors import ConfigError
    from trainsim.validate import BUNDLED_DIR, read_rows
    from trainsim.validate.training import row_config

    out = random_valid_configs(seed, n)
    for row in read_rows(BUNDLED_DIR / "training_public.csv")[1]:
        try:
            out.append(row_config(row, compute_db=None))
        except (ConfigError, ValueError, KeyError):
            continue
    return out


def state_proof(tl, copy: list[int], n_per: int) -> float | None:
    """``period_of_state_s`` on a run of copies of a period (``copy``: each task's copy, -1 a
    FIXED warm-up, 0-1 the prefix, 2 the period, 3 the tail), each prefix task's ``later``
    ``n_per`` tasks on."""
    from trainsim.engine.periodic import FIXED, period_of_state_s

    part = bytes(0 if c < 2 else 1 if c == 2 else 2 for c in copy)
    bounds = {}
    for stream, queue in tl.queues.items():
        ps = [part[i] for i in queue]
        bounds[stream] = (ps.count(0), ps.count(0) + ps.count(1))
    later = [FIXED if c < 0 else i + n_per if c < 2 else -1 for i, c in enumerate(copy)]
    return period_of_state_s(tl, part, bounds, later.__getitem__)


def loadable_keys(space, base, gpus: int) -> list:
    """The search space's memory groups on ``gpus`` whose candidate loads as a config (the
    groups the search keeps: a refused one, e.g. HSDP without a sharded replica, is left out)."""
    from trainsim.errors import ConfigError
    from trainsim.search.space import Candidate

    def loads(key) -> bool:
        try:
            Candidate(key).to_config(base)
        except ConfigError:
            return False
        return True
    return [k for k in space.memory_keys(base, gpus) if loads(k)]



def hf_config_read(tmp_path: Path, cfg: dict) -> tuple:
    """(model, trainsim warning messages) of ``model_from_hf_config`` on ``cfg`` written as a
    config.json in ``tmp_path``: the robustness rounds' reading check."""
    import json
    import warnings

    from trainsim.catalog.hf_config import model_from_hf_config
    from trainsim.errors import TrainsimWarning

    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = model_from_hf_config(path)
    return model, [str(w.message) for w in caught if issubclass(w.category, TrainsimWarning)]


def pipelined_configs(n: int, schedule: str, micro_batches) -> list:
    """``n`` random configs (:func:`random_config`, seed 50) with a pipeline (pp > 1) under
    ``schedule``, ZeRO 0-2 (the named schedules do not place ZeRO-3's gathers), 1-3 layers a
    stage and ``micro_batches(pp)`` = (fewest, most) micro-batches a replica, drawn evenly."""
    from trainsim import run_config_from_dict
    from trainsim.errors import ConfigError
    rng = random.Random(50)
    out = []
    while len(out) < n:
        raw = random_config(rng)
        par, train = raw["parallel"], raw["training"]
        pp = par["pp"]
        if pp == 1:
            continue
        raw["model"]["num_layers"] = pp * rng.randint(1, 3)
        par.update(pipeline_schedule=schedule, vpp=None, zero_stage=rng.choice([0, 1, 2]))
        dp = raw["cluster"]["num_gpus"] // (par["tp"] * pp * par["cp"])
        train["global_batch_size"] = (rng.randint(*micro_batches(pp))
                                      * train["micro_batch_size"] * dp)
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def pp2_dualpipe_configs(n: int, seed: int = 51,
                         micro_batches: tuple[int, int] | None = None) -> list:
    """Random pp-2 DualPipe configs (:func:`random_config`), ZeRO 0-2, 1-3 layers a stage,
    dp 1, 2 or 4; 32 to 88 micro-batches (ss51's draw) or ``micro_batches`` (fewest, most),
    an even count (half a direction)."""
    from trainsim import run_config_from_dict
    from trainsim.errors import ConfigError
    rng, out = random.Random(seed), []
    while len(out) < n:
        raw = random_config(rng)
        par, train, cluster = raw["parallel"], raw["training"], raw["cluster"]
        par["pp"] = 2
        dp = rng.choice([1, 2, 4])
        cluster["num_gpus"] = par["tp"] * 2 * par["cp"] * dp
        cluster["gpus_per_node"] = min(8, cluster["num_gpus"])
        raw["model"]["num_layers"] = 2 * rng.randint(1, 3)
        par.update(pipeline_schedule="dualpipe", vpp=None, zero_stage=rng.choice([0, 1, 2]))
        if "ep" in par and (par["tp"] * par["cp"] * dp) % par["ep"]:
            continue
        micro = rng.randint(*(micro_batches or (8 * 2 + 16, 12 * 2 + 64)))
        train["global_batch_size"] = (micro + micro % 2) * train["micro_batch_size"] * dp
        try:
            out.append(run_config_from_dict(raw))
        except ConfigError:
            continue
    return out


def shortcut_methods(configs) -> dict[str, int]:
    """Each config simulated in full (a timeline asked for: every micro-batch) and by the
    shortcut, the two held equal (:func:`assert_same_simulation`); how many took each method."""
    from collections import Counter

    from trainsim import simulate
    methods: Counter = Counter()
    for cfg in configs:
        full = simulate(cfg, keep_timeline=True)
        fast = simulate(cfg)
        methods[fast.simulation["method"]] += 1
        assert_same_simulation(fast, full)
    return methods


def assert_same_simulation(fast, full) -> None:
    """A shortcut's Result equals the full simulation's within 1e-9 relative (issue 21 item 1):
    iteration time, every breakdown entry, exposed communication and the critical stage."""
    scale = 1e-9 * full.iteration_time_s
    assert fast.iteration_time_s == pytest.approx(full.iteration_time_s, rel=1e-9, abs=0)
    for key, value in full.breakdown.items():
        assert fast.breakdown[key] == pytest.approx(value, rel=1e-9, abs=scale), key
    assert fast.exposed_comm == pytest.approx(full.exposed_comm, rel=1e-9, abs=scale)
    assert fast.critical_stage == full.critical_stage


class CommRecorder(Pricer):
    """A pricer that keeps every collective the task graph prices, in order (``.comms``)."""

    def __init__(self, c) -> None:
        super().__init__(c)
        self.comms: list = []

    def comm_time(self, op):
        self.comms.append(op)
        return super().comm_time(op)
