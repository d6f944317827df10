"""Fuzzing (issue 18): random configs and command lines end in a result with sane values or in
one clean error line; never a traceback, a hang, or a refusal of a valid config.

The default run tries about a hundred inputs (about 15 s); ``-m slow`` runs 10,000 configs and
600 command lines. Three properties:

- *valid configs are simulated*: configs built to satisfy every documented rule (divisibility,
  GPU features, MoE placement) must simulate, with sane values;
- *any config is handled*: a valid config with random fields replaced by junk (wrong types,
  negative, huge, nan, nested, unknown) either simulates with sane values or raises
  TrainsimError with a one-line message;
- *any command line is handled*: the CLI, run in-process with ``TRAINSIM_DEBUG=1`` (so only a
  TrainsimError or click's usage error is turned into a message; anything else escapes and
  fails the test), exits 0, or exits 2 with one ``error:`` line (``warning:`` lines aside), or,
  for ``plan`` only, exits 1 saying that no GPU count meets the deadline.
"""

from __future__ import annotations

import math
import os
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainsim.catalog import run_config_from_dict
from trainsim.cli import main
from trainsim.errors import TrainsimError
from trainsim.limits import DEFAULTS
from trainsim.simulator import simulate

FAST = settings(max_examples=40, deadline=timedelta(seconds=120), derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW_CONFIGS = settings(FAST, max_examples=5000)
SLOW_CLI = settings(FAST, max_examples=600)
"""40 examples by default (120 up to the 36th session; the slow runs above keep their counts);
a 120 s deadline still names a hang while a loaded host's 3x slower first run (a deadline of 20 s
on a 9 s ``profile --quick``) no longer reads as a flaky failure."""


# ---------------------------------------------------------------------------- valid configs

@st.composite
def valid_configs(draw) -> dict:
    """A small config that satisfies every rule RunConfig documents (so none may be refused)."""
    head_dim = draw(st.sampled_from([16, 32, 64]))
    heads = draw(st.sampled_from([4, 8, 16]))
    kv = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16) if heads % d == 0]))
    moe = draw(st.booleans())
    tp = draw(st.sampled_from([t for t in (1, 2, 4) if heads % t == 0
                               and (kv % t == 0 or t % kv == 0)]))
    pp = draw(st.sampled_from([1, 2, 4]))
    vpp = draw(st.sampled_from([1, 2])) if pp > 1 else 1
    cp = draw(st.sampled_from([1, 2, 3, 4]))
    dp = draw(st.sampled_from([1, 2, 4]))
    layers = pp * vpp * draw(st.integers(1, 3))
    gpus = tp * pp * cp * dp
    per_node = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g >= gpus or gpus % g == 0]))
    mbs = draw(st.sampled_from([1, 2]))
    micro = pp * draw(st.integers(1, 3)) if vpp > 1 else draw(st.integers(1, 6))
    model: dict = {"hidden_size": heads * head_dim, "num_layers": layers,
                   "num_attention_heads": heads, "num_kv_heads": kv, "vocab_size": 1024,
                   "ffn_hidden_size": 4 * heads * head_dim,
                   "activation": draw(st.sampled_from(["gelu", "swiglu"]))}
    parallel: dict = {"tp": tp, "pp": pp, "cp": cp, "vpp": vpp if vpp > 1 else None,
                      "sequence_parallel": tp > 1 and (moe or draw(st.booleans())),
                      "recompute": draw(st.sampled_from(["none", "selective", "full"])),
                      "zero_stage": draw(st.sampled_from([0, 1, 3])),  # Megatron (config.validity)
                      "overlap_grad_reduce": draw(st.booleans()),
                      "tp_comm_overlap": draw(st.booleans()),
                      "cp_comm_type": draw(st.sampled_from(
                          ["p2p", "all_gather"] + (["a2a"] if heads % (tp * cp) == 0 else [])))}
    if moe:
        experts = draw(st.sampled_from([4, 8]))
        ep = draw(st.sampled_from([e for e in (1, 2, 4) if experts % e == 0
                                   and (tp * cp * dp) % e == 0]))
        model.update(num_experts=experts, moe_router_topk=draw(st.sampled_from([1, 2])),
                     moe_ffn_hidden_size=2 * head_dim * heads)
        parallel["ep"] = ep
    gpu = draw(st.sampled_from(["h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb"]))
    dtype = draw(st.sampled_from(["bf16", "fp16"] + (["fp8"] if gpu != "a100-sxm-80gb" else [])))
    topology = draw(st.sampled_from(["rail-optimized", "spine-leaf", "torus"]
                                    + (["nvl72"] if gpus <= 72 else [])))
    cluster = {"gpu": gpu, "num_gpus": gpus,
               "gpus_per_node": 72 if topology == "nvl72" else per_node,
               "network_backend": draw(st.sampled_from(["analytical", "flow"])),
               "nccl_algo": draw(st.sampled_from(["auto", "ring"])), "compute_db": None,
               "topology": topology, "nodes_per_leaf": draw(st.sampled_from([1, 2, 32]))}
    if topology != "torus":
        cluster["oversubscription"] = draw(st.sampled_from([1, 1.5, 4]))
    seq = 2 * cp * draw(st.sampled_from([32, 64, 128]))
    training = {"global_batch_size": mbs * dp * micro, "micro_batch_size": mbs,
                "seq_length": seq, "dtype": dtype}
    return {"model": model, "parallel": {k: v for k, v in parallel.items() if v is not None},
            "training": training, "cluster": cluster}


def assert_sane(result, most_utilization: float = 1.0) -> None:
    """Values a simulated iteration can have."""
    t = result.iteration_time_s
    assert math.isfinite(t) and t > 0
    for name in ("mfu", "hfu"):
        value = getattr(result, name)
        assert 0 < value <= most_utilization, (name, value)
    assert result.peak_memory_bytes > 0
    assert all(v >= -1e-12 and math.isfinite(v) for v in result.breakdown.values())
    assert sum(result.breakdown.values()) == pytest.approx(t, rel=1e-6)
    assert result.tokens_per_s > 0


def check_valid(cfg: dict) -> None:
    try:
        result = simulate(run_config_from_dict(cfg))
    except TrainsimError as exc:
        pytest.fail(f"a valid config was refused: {exc}\n{cfg}")
    assert_sane(result)


@FAST
@given(valid_configs())
def test_valid_configs_are_simulated_with_sane_values(cfg):
    """Every config built to satisfy the documented rules simulates; MFU and HFU in (0, 1]."""
    check_valid(cfg)


@pytest.mark.slow
@SLOW_CONFIGS
@given(valid_configs())
def test_valid_configs_are_simulated_slow(cfg):
    check_valid(cfg)


# ---------------------------------------------------------------------------- any config

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**30, 10**30), st.floats(allow_nan=True),
    st.text(max_size=12), st.sampled_from(["", "nan", "inf", "-1", "1e400", "2020-01-01",
                                           "fast", "0", "1.5", "[1,2]", "{}", "auto",
                                           "Et*99999999999|L", "Et|tL", "balanced",
                                           "torus", "nvl72", "spine_leaf", "2,2", "[4]"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4), st.integers(),
                                                         max_size=2))
FIELDS = {
    "model": ["hidden_size", "num_layers", "num_attention_heads", "num_kv_heads", "head_dim",
              "ffn_hidden_size", "vocab_size", "activation", "num_experts", "moe_router_topk",
              "mtp_num_layers", "sliding_window", "name", "preset", "hf_config", "bogus"],
    "parallel": ["tp", "pp", "cp", "ep", "etp", "vpp", "sequence_parallel", "recompute",
                 "recompute_num_layers", "zero_stage", "pipeline_model_parallel_layout",
                 "decoder_first_pipeline_num_layers", "cp_comm_type", "bogus"],
    "training": ["global_batch_size", "micro_batch_size", "seq_length", "dtype", "optimizer",
                 "attention", "framework", "train_tokens", "num_workers", "bogus"],
    "cluster": ["gpu", "num_gpus", "gpus_per_node", "nic_gbps_per_gpu", "nvlink_gbps",
                "nic_gbit_s_per_gpu", "nvlink_gbyte_s", "network_backend", "nccl_algo",
                "nccl_proto", "pue", "price_per_gpu_hour", "compute_db", "gpu_overrides", "node",
                "topology", "nodes_per_leaf", "oversubscription", "torus_dims", "domain_gpus",
                "bogus"],
}
GPU_FIELDS = ["peak_tflops", "hbm_gib", "hbm_bw_gbps", "nvlink_gbps", "hbm_gbyte_s",
              "nvlink_gbyte_s", "mamf_fraction",
              "mamf_fraction_fp8", "tdp_w", "power_limit_w", "price_per_hour", "num_sms"]


@st.composite
def mutated_configs(draw) -> dict:
    cfg = draw(valid_configs())
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["section"] + list(FIELDS) * 3 + ["gpu"]))
        if where == "section":
            cfg[draw(st.sampled_from(list(FIELDS) + ["extra"]))] = draw(JUNK)
        elif where == "gpu" and isinstance(cfg.get("cluster"), dict):
            over = cfg["cluster"].setdefault("gpu_overrides", {})
            if isinstance(over, dict):
                over[draw(st.sampled_from(GPU_FIELDS))] = draw(JUNK)
        elif isinstance(cfg.get(where), dict):
            cfg[where][draw(st.sampled_from(FIELDS[where]))] = draw(JUNK)
    return cfg


def check_any(cfg: dict, most_utilization: float = 1.0) -> None:
    try:
        result = simulate(run_config_from_dict(cfg))
    except TrainsimError as exc:
        assert "\n" not in str(exc) and str(exc), repr(str(exc))
        return
    assert_sane(result, most_utilization)


@FAST
@given(mutated_configs())
def test_any_config_simulates_or_is_one_clean_error(cfg):
    """A config with junk fields: a sane result or a one-line TrainsimError, nothing else."""
    check_any(cfg)


@pytest.mark.slow
@SLOW_CONFIGS
@given(mutated_configs())
def test_any_config_slow(cfg):
    check_any(cfg)


# ---------------------------------------------------------------------------- extreme configs

@st.composite
def extreme_configs(draw) -> dict:
    """A config at the edges a user may reach (the 2026-11-24 sweep): 1 or 1,000 layers, width
    8, vocabulary 1, a 1M-token sequence, 10,000 experts, 65,536 GPUs, one GPU per node, a
    NIC of 1 Mbit/s; each rule RunConfig documents may still refuse it (in one line)."""
    heads = draw(st.sampled_from([1, 2, 8, 64]))
    model: dict = {"hidden_size": heads * draw(st.sampled_from([1, 8, 128])),
                   "num_layers": draw(st.sampled_from([1, 2, 96, 1000])),
                   "num_attention_heads": heads, "vocab_size": draw(st.sampled_from([1, 2, 10**6])),
                   "ffn_hidden_size": draw(st.sampled_from([1, 8, 16384])),
                   "activation": draw(st.sampled_from(["gelu", "swiglu"]))}
    gpus = draw(st.sampled_from([1, 2, 8, 4096, 65536]))
    parallel: dict = {"recompute": draw(st.sampled_from(["none", "selective", "full"])),
                      "zero_stage": draw(st.sampled_from([0, 1, 3]))}
    if draw(st.booleans()):
        experts = draw(st.sampled_from([1, 8, 10000]))
        model.update(num_experts=experts,
                     moe_router_topk=draw(st.sampled_from([k for k in (1, 2, 8) if k <= experts])),
                     moe_ffn_hidden_size=draw(st.sampled_from([1, 4096])))
        for name in ("moe_capacity_factor", "moe_token_imbalance"):
            if draw(st.booleans()):
                model[name] = draw(st.sampled_from([1.0, float(experts)]))
        parallel["ep"] = draw(st.sampled_from([e for e in (1, 8) if experts % e == 0
                                               and gpus % e == 0]))
    cluster = {"gpu": draw(st.sampled_from(["h100-sxm-80gb", "a100-sxm-80gb", "mi300x"])),
               "num_gpus": gpus, "gpus_per_node": draw(st.sampled_from([1, min(8, gpus)])),
               "nic_gbit_s_per_gpu": draw(st.sampled_from([0.001, 400, 10**6])),
               "compute_db": draw(st.sampled_from([None, "auto"]))}
    training = {"global_batch_size": gpus * draw(st.sampled_from([1, 2])),
                "seq_length": draw(st.sampled_from([1, 2, 4096, 2**20])),
                "train_tokens": draw(st.sampled_from([1.0, 1e15, 1e20]))}
    return {"model": model, "parallel": parallel, "training": training, "cluster": cluster}


CAUSAL_COUNTED_FULL = 2.0
"""MFU and HFU count causal attention's full s x s scores (model_flops_per_token, Megatron's
convention) while a causal kernel runs half of them: where attention is nearly all of the work
(a 1M-token sequence of a 128-wide model, full recompute) HFU reaches 1.05; it stays below 2."""


@settings(FAST, max_examples=10)
@given(extreme_configs())
def test_extreme_configs_simulate_sanely_or_fail_in_one_line(cfg):
    """At the edges: a sane result (finite and positive; MFU and HFU positive and within the
    causal-attention convention's bound) or one clean error."""
    check_any(cfg, CAUSAL_COUNTED_FULL)


@pytest.mark.slow
@settings(FAST, max_examples=600)
@given(extreme_configs())
def test_extreme_configs_slow(cfg):
    check_any(cfg, CAUSAL_COUNTED_FULL)


# ---------------------------------------------------------------------------- command lines

TINY = """model: {hidden_size: 256, num_layers: 2, num_attention_heads: 4, vocab_size: 1024}
training: {global_batch_size: 8, seq_length: 256}
cluster: {gpu: h100-sxm-80gb, num_gpus: 8, compute_db: null}
"""
HF_CONFIG = """{"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
"intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 512,
"rms_norm_eps": 1e-5, "hidden_act": "silu", "bos_token_id": 0, "eos_token_id": 1}"""
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
VALUES = st.one_of(st.sampled_from(["1", "2", "8", "0", "-1", "nan", "inf", "1e400", "abc",
                                    "1.2.3", "tp=[", "8:infG", "99", "", "2020-01-01",
                                    "16:1K", "30m", "15T", "1e-300", "tp=2,pp=2", "ring",
                                    "fp8", "flow", "json", "/dev/full", "missing/dir/x"]),
                   st.text(max_size=8))
SETS = st.tuples(st.sampled_from([f"{s}.{f}" for s, fs in FIELDS.items() for f in fs]),
                 VALUES).map(lambda kv: f"{kv[0]}={kv[1]}")


GPUS = st.sampled_from(["8", "8", "4,8", "16", "0", "-8", "x", "1e15", "8,,16", "3"])
COUNTS = st.sampled_from(["1", "2", "8", "0", "-1", "x", "1e9", "1.5"])
TOKENS = st.one_of(st.sampled_from(["1B", "300B", "1T", "15T", "1e9", "0", "-1", "1.2.3", "x",
                                    "1e400", "inf"]), st.text(max_size=5))
MODELS = st.sampled_from(["tiny_model.yaml", "tiny_model.yaml", "tiny.yaml", "hf.json",
                          "bogus-model", "missing.yaml", "bad.yaml"])
"""Search inputs; a real model's search is bounded but takes longer than a fuzz example (a
Llama 3 8B search over two GPU counts on one worker: about 30 s, with a progress bar)."""
VARY = st.one_of(st.sampled_from([
    "cluster.nvlink_gbyte_s=300:900", "cluster.nvlink_gbps=300,900", "parallel.tp=1:8",
    "parallel.tp=1,2,4", "cluster.topology=torus,spine-leaf", "training.seq_length=1e15",
    "cluster.nic_gbit_s_per_gpu=100:800", "cluster.gpu_overrides.hbm_gbyte_s=1000:4000",
    "nvlink=1:2", "cluster.nvlink_gbyte_s", "cluster.nvlink_gbyte_s=a:b", "x=1",
    "cluster.oversubscription=1,4", "cluster.num_gpus=8:1e12"]), SETS)


def _options(draw, table: dict) -> list[str]:
    """A few of ``table``'s options (name -> strategy of values, or None for a flag)."""
    args: list[str] = []
    for opt in draw(st.lists(st.sampled_from(sorted(table)), max_size=4, unique=True)):
        args += [opt] if table[opt] is None else [opt, draw(table[opt])]
    return args


SEARCH_OPTS = {
    "--top": COUNTS, "--rank-by": st.sampled_from(["split", "layout", "config", "x"]),
    "--reference": st.sampled_from(["tp=2,pp=1", "tp=[", "tp=3", "", "pp=2,cp=2", "bogus=1"]),
    "--pareto-slowdown": st.sampled_from(["1.25", "0.5", "nan", "x"]),
    "--format": st.sampled_from(["table", "json", "csv"]), "--exhaustive": None,
    "--tp": st.sampled_from(["1,2", "3", "0", "x", "1e9"]), "--pp": st.sampled_from(["1,2", "0"]),
    "--cp": st.sampled_from(["1,2", "-1"]), "--recompute": st.sampled_from(["none", "x", ""]),
    "--zero": st.sampled_from(["0,1", "4", "x"]), "--overlap": st.sampled_from(["on", "off"]),
    "--gpu": st.sampled_from(["a100-sxm-80gb", "bogus", "gpu.yaml", "tiny.yaml"]),
    "--gpus-per-node": st.sampled_from(["4", "8", "0", "72"]),
    "--nic-gbit-s": st.sampled_from(["200", "0", "nan"]), "--nic-gbps": st.sampled_from(["100"]),
    "--dtype": st.sampled_from(["bf16", "fp8", "fp4"]), "--set": SETS,
    "--max-vpp": COUNTS, "--max-micro-batch": COUNTS,
    "--schedules": st.sampled_from(["1f1b,zb_v", "dualpipe", "bogus"]),
    "--executor": st.sampled_from(["local", "ray"]),
    "--plot": st.sampled_from(["out/s.png", "missing/dir/s.png", "/dev/full"]),
}
PLAN_OPTS = {
    "--global-batch": COUNTS, "--seq": st.sampled_from(["256", "0", "1e9"]),
    "--max-gpus": st.sampled_from(["8", "16", "0", "x"]),
    "--price": st.sampled_from(["2", "-1", "nan"]), "--pue": st.sampled_from(["1.2", "0.5"]),
    "--grid": st.sampled_from(["400", "-1"]), "--gpu-idle-fraction": st.sampled_from(["0.1", "2"]),
    "--node-overhead": st.sampled_from(["0.5", "inf"]), "--format": st.sampled_from(["json"]),
    "--gpu": SEARCH_OPTS["--gpu"], "--dtype": SEARCH_OPTS["--dtype"], "--set": SETS,
    "--tp": SEARCH_OPTS["--tp"],
}
SWEEP_OPTS = {"--steps": st.sampled_from(["2", "3", "0", "x", "1e9"]), "--set": SETS,
              "--out": st.sampled_from(["out/sw", "missing/dir/sw", "/dev/full", "tiny.yaml"]),
              "--format": st.sampled_from(["table", "json", "csv"])}
CAPTURE_OPTS = {
    "--tp": st.sampled_from(["1", "2", "3", "0", "x"]), "--seq": st.sampled_from(["64", "0"]),
    "--gpus": st.sampled_from(["1", "2", "0"]), "--gbs": st.sampled_from(["2", "3", "0"]),
    "--gpu": st.sampled_from(["a100-sxm-80gb", "bogus"]), "--eager": None, "--kernels": None,
    "--attention": st.sampled_from(["sdpa", "eager", "x"]), "--simulate": None,
    "--format": st.sampled_from(["json"]), "--set": SETS,
    "--out": st.sampled_from(["out/c.txt", "missing/dir/c.txt", "/dev/full"]),
}
EXPORT_OPTS = {
    "--chakra": st.sampled_from(["out/x", "missing/dir/x", "/dev/full/x"]),
    "--simai": st.sampled_from(["out/w.txt", "missing/dir/w.txt", "/dev/full"]),
    "--ranks": VALUES, "--per-kernel": None, "--tp": st.sampled_from(["2", "3", "0"]),
    "--gpus": st.sampled_from(["8", "16", "5"]), "--set": SETS,
}
PROFILE_OPTS = {
    "--models": st.sampled_from(["llama3-8b", "bogus", "", "llama3-8b,,"]),
    "--tp": st.sampled_from(["1", "0", "x", "1,2"]), "--seq": st.sampled_from(["4096", "-1", ""]),
    "--cp": st.sampled_from(["1", "0"]), "--mbs": st.sampled_from(["1", "0", "x"]),
    "--merge": None, "--no-layers": None, "--no-kernels": None,
}


@st.composite
def command_lines(draw, commands=("simulate", "simulate", "collective", "catalog", "goodput",
                                  "validate", "export", "search", "plan", "sweep", "capture",
                                  "profile", "bogus")) -> list[str]:
    cmd = draw(st.sampled_from(commands))
    args = [cmd]
    if cmd == "simulate":
        args.append(draw(st.sampled_from(["tiny.yaml", "tiny.yaml", "missing.yaml",
                                          "/dev/null", "bad.yaml"])))
        for s in draw(st.lists(SETS, max_size=3)):
            args += ["--set", s]
        if draw(st.booleans()):
            args += ["--format", "json"]
        if draw(st.integers(0, 4)) == 0:
            args += ["--trace", draw(st.sampled_from(["t.json", "no/dir/t.json", "/dev/full"]))]
        if draw(st.integers(0, 4)) == 0:
            args += ["--max-tasks", draw(VALUES)]
    elif cmd == "collective":
        for opt in draw(st.lists(st.sampled_from(
                ["--gpus", "--gpus-per-node", "--nic-gbps", "--nic-gbit-s", "--op", "--sizes",
                 "--algorithm", "--protocol", "--backend", "--topology", "--max-flows"]),
                max_size=4, unique=True)):
            value = draw(VALUES)
            if opt == "--gpus":  # keep the valid ones small: this is about handling, not speed
                value = draw(st.sampled_from(["1", "2", "16", "0", "-4", "x", "64"]))
            elif opt == "--topology":
                value = draw(st.sampled_from(["torus", "spine-leaf", "nvl72", "rail", "x"]))
            args += [opt, value]
    elif cmd == "catalog":
        args.append(draw(st.sampled_from(["gpus", "nodes", "models", "bogus"])))
    elif cmd == "goodput":
        args += ["tiny.yaml", "--tokens", draw(TOKENS), "--trials",
                 draw(st.sampled_from(["1", "10", "0", "-1", "1e8", "x"]))]
        for opt in draw(st.lists(st.sampled_from(["--days", "--interval", "--seed", "--gpus",
                                                  "--set", "--failures", "--format"]),
                                 max_size=2, unique=True)):
            args += [opt, draw(VALUES)]
    elif cmd == "validate":
        args.append(draw(st.sampled_from(["bad.csv", "missing.csv", "tiny.yaml", "/dev/null"])))
    elif cmd == "export":
        args += [draw(st.sampled_from(["tiny.yaml", "tiny.yaml", "hf.json", "missing.yaml"]))]
        args += _options(draw, EXPORT_OPTS)
    elif cmd in ("search", "plan"):
        args += [draw(MODELS if cmd == "search" else st.one_of(MODELS, st.just("llama3-8b"))),
                 "--workers", "1"]
        if cmd == "search":
            args += ["--gpus", draw(GPUS), "--global-batch",
                     draw(st.sampled_from(["8", "16", "0", "1e15", "x"])), "--seq",
                     draw(st.sampled_from(["256", "512", "0", "x"]))]
        else:
            args += ["--tokens", draw(TOKENS), "--days",
                     draw(st.sampled_from(["30", "0.01", "1e9", "0", "x"])),
                     "--max-gpus", "16", "--seq", "256"]
        args += _options(draw, SEARCH_OPTS if cmd == "search" else PLAN_OPTS)
    elif cmd == "sweep":
        args += [draw(st.sampled_from(["tiny.yaml", "tiny.yaml", "missing.yaml", "bad.yaml"]))]
        for v in draw(st.lists(VARY, min_size=1, max_size=2)):
            args += ["--vary", v]
        args += _options(draw, SWEEP_OPTS)
    elif cmd == "capture":
        args += [draw(st.sampled_from(["hf.json", "hf.json", "tiny.yaml", "missing.json",
                                       "bad.yaml", "os:getcwd", "no_such_module:f"]))]
        args += ["--seq", "64"] + _options(draw, CAPTURE_OPTS)
    elif cmd == "profile":
        args += ["--gpu", draw(st.sampled_from(["h100-sxm-80gb", "bogus"])), "--out",
                 draw(st.sampled_from(["out/p.json", "missing/dir/p.json", "/dev/full",
                                       "bad.csv"]))]
        # no CUDA here: cuda is one clean error; cpu runs the quick dry run of one shape
        if draw(st.booleans()):
            args += ["--device", "cpu", "--quick", "--models", "llama3-8b", "--tp", "1",
                     "--seq", "4096", "--no-layers"]
        args += _options(draw, PROFILE_OPTS)
    return args


@pytest.fixture(scope="module")
def cli_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    (d / "tiny.yaml").write_text(TINY)
    (d / "tiny_model.yaml").write_text(TINY.splitlines()[0] + "\n")
    (d / "hf.json").write_text(HF_CONFIG)
    (d / "gpu.yaml").write_text((EXAMPLES / "gpu-hypothetical.yaml").read_text())
    (d / "bad.yaml").write_text("model: [1, 2\n")
    (d / "bad.csv").write_text("id,model,measured_iteration_s\nx,y,abc\n")
    (d / "out").mkdir()
    return d


def check_cli(args: list[str], cli_dir) -> None:
    cwd = os.getcwd()
    os.chdir(cli_dir)
    try:
        # each command line starts as a fresh process would: a --max-* flag sets its limit in
        # the environment, which would otherwise refuse every later example in this process
        env = {"TRAINSIM_DEBUG": "1", **dict.fromkeys(DEFAULTS)}
        result = CliRunner().invoke(main, args, env=env)
    finally:
        os.chdir(cwd)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback: the test fails with it
    assert "Traceback" not in result.output
    if result.exit_code == 1 and args[0] == "plan":  # an answer: no GPU count is fast enough
        assert "meets the deadline" in result.output, (args, result.output)
        return
    if result.exit_code:
        assert result.exit_code == 2, (args, result.exit_code, result.output)
        lines = [ln for ln in result.stderr.splitlines()
                 if ln.strip() and not ln.startswith("warning: ")]
        # one line, click's usage errors too (they printed Usage/Try/Error: lines)
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, result.stderr)


@FAST
@given(command_lines())
def test_any_command_line_exits_cleanly(cli_dir, args):
    """A command line: exit 0, or exit 2 with one error line; never a traceback."""
    check_cli(args, cli_dir)


@pytest.mark.slow
@SLOW_CLI
@given(command_lines())
def test_any_command_line_slow(cli_dir, args):
    check_cli(args, cli_dir)
