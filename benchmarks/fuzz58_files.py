"""fuzz58's surfaces whose oracle reads back a file trainsim wrote (``mllama``: the resolved
config; ``exportrt``: Chakra traces and a SimAI file): a TrainsimError on reading trainsim's own
file is a FAILURE there (chakra57 lead 2: counted as a handled refusal, it hid DualPipe's
unmatched receives), while a refusal of the input itself stays a refusal."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

from fuzz_checks import BASES, REFUSED, Case, sane_result

from trainsim.errors import TrainsimError
from trainsim.limits import WorkLimitError

MLLAMA_VERSIONS = ["2023-08", "2023-09-04", "2024-01", "2023-01", "", None, "bogus", "0.1",
                   "2023-08-03", " 2023-08 ", "2023.08"]
ENGINES = [None, None, "megatron", "deepspeed", "fsdp2", "fsdp1"]
ATTENTION = [None, None, "flash2", "flash1", "unfused", "cudnn", "sdpa"]


def _resolved_again(result: Any, what: str) -> str | None:
    """The run's resolved config (``simulate --format json``'s ``config``) built and simulated
    again: the same iteration (1e-9); a TrainsimError reading it is this function's finding."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    written = json.loads(json.dumps(result.to_dict()["config"]))
    try:
        again = simulate(run_config_from_dict(written))
    except TrainsimError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"{what}: trainsim refuses the resolved config it printed: {first[:110]}"
    if not math.isclose(again.iteration_time_s, result.iteration_time_s, rel_tol=1e-9):
        return f"{what}: the resolved config answers {again.iteration_time_s / result.iteration_time_s - 1:+.3g}"
    return None


def _mllama_run(rng: random.Random) -> dict[str, Any]:
    cfg = copy.deepcopy(BASES[rng.choice(["dense", "dense", "moe"])])
    training = cfg["training"]
    training["framework"] = "megatron-llama"
    version = rng.choice(MLLAMA_VERSIONS)
    if version is not None:
        training["framework_version"] = version
    p: dict[str, Any] = {"tp": rng.choice([1, 2]), "pp": rng.choice([1, 2]),
                         "cp": rng.choice([1, 1, 2])}
    if p["tp"] > 1:
        p["sequence_parallel"] = rng.random() < 0.6
    if p["pp"] > 1 and rng.random() < 0.4:
        p["vpp"] = 2
    engine = rng.choice(ENGINES)
    if engine:
        p["data_parallel_impl"] = engine
    if rng.random() < 0.5:
        p["distributed_optimizer"] = rng.random() < 0.6
    if rng.random() < 0.3:
        p["zero_stage"] = rng.choice([0, 1, 2, 3])
    for key in ("overlap_grad_reduce", "overlap_param_gather"):
        if rng.random() < 0.3:
            p[key] = rng.random() < 0.5
    if "num_experts" in cfg["model"]:
        p["ep"] = rng.choice([1, 2])
    p["recompute"] = rng.choice(["none", "selective", "full"])
    dp = rng.choice([1, 2, 4])
    gpus = p["tp"] * p["pp"] * p["cp"] * dp
    mbs = rng.choice([1, 2])
    training.update(micro_batch_size=mbs, global_batch_size=mbs * dp * rng.choice([1, 4]) * p["pp"],
                    dtype=rng.choice(["bf16", "bf16", "fp16", "fp8"]))
    attention = rng.choice(ATTENTION)
    if attention:
        training["attention"] = attention
    cfg["parallel"] = p
    cfg["cluster"].update(num_gpus=gpus, gpus_per_node=min(gpus, 8))
    if rng.random() < 0.3:
        cfg["cluster"]["gpu"] = rng.choice(["a100-sxm-80gb", "h800-sxm-80gb"])
    return cfg


def _mllama_check(cfg: dict[str, Any]) -> str | None:
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    try:
        result = simulate(run_config_from_dict(copy.deepcopy(cfg)))
    except TrainsimError as exc:
        REFUSED[0] += 1
        return None if str(exc).strip() and "\n" not in str(exc).strip() else \
            "a refusal of more than one line"
    return sane_result(result) or _resolved_again(result, "megatron-llama")


def mllama_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for _ in range(120):
            cfg = _mllama_run(rng)
            label = json.dumps({k: cfg[k] for k in ("parallel", "training")}, sort_keys=True)
            yield label, (lambda c=cfg: _mllama_check(c))
    return cases


# ------------------------------------------------------------------------------ exportrt

FRAMEWORKS = [None, "megatron-core", "nemo", "megatron-llama", "mlperf-nemo", "torchtitan",
              "deepspeed", "megatron-deepspeed", "megatron-bridge"]


def _export_run(rng: random.Random) -> dict[str, Any]:
    from fuzz51 import _random_run

    cfg = _random_run(rng)
    fw = rng.choice(FRAMEWORKS)
    if fw:
        cfg["training"]["framework"] = fw
        cfg["parallel"].pop("data_parallel_impl", None)  # the framework's own engine
        if fw not in ("deepspeed", "megatron-deepspeed"):
            cfg["parallel"].pop("zero_stage", None)
    p = cfg["parallel"]
    if p.get("pp", 1) > 1 and rng.random() < 0.4:
        p["defer_embedding_wgrad_compute"] = True
        p["wgrad_deferral_limit"] = rng.choice([0, 1, 2, 4])
    if "num_experts" in cfg["model"] and p.get("tp", 1) > 1 and rng.random() < 0.5:
        p["expert_tensor_parallel_size"] = rng.choice([1, p["tp"]])
    return cfg


def _export_check(cfg: dict[str, Any], workdir: str, per_kernel: bool) -> str | None:
    """``fuzz51._round_trip`` where the run is one ``simulate`` answers, any TrainsimError of
    the export or of reading its files back counted as a failure (the task limit aside)."""
    from fuzz51 import _round_trip

    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    try:
        result = simulate(run_config_from_dict(copy.deepcopy(cfg)))
    except TrainsimError:
        REFUSED[0] += 1
        return None  # the input refused: fuzz51's rounds grade those
    try:
        found = _round_trip(cfg, workdir, per_kernel)
    except WorkLimitError:
        return None
    except TrainsimError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"a run simulate answers: its export or the read-back refused: {first[:110]}"
    return found or _resolved_again(result, "export")


def exportrt_cases(workdir: str, rng: random.Random) -> Callable[[], Iterator[Case]]:
    def cases() -> Iterator[Case]:
        for i in range(120):
            cfg = _export_run(rng)
            per_kernel = i % 6 == 0
            label = json.dumps({k: cfg[k] for k in ("parallel", "training")}, sort_keys=True)
            yield f"{'per-kernel ' if per_kernel else ''}{label}", (
                lambda c=cfg, k=per_kernel: _export_check(c, workdir, k))
    return cases


__all__ = ["exportrt_cases", "mllama_cases"]
