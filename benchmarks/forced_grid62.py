"""robust62: the up-front refusal of a forced ``cluster.nccl_algo`` (``network.forced_algo``)
against the pricer's (``simulator._simulate``, which skips it) over a seeded grid of layouts:
3 bases x 16 frameworks x tp / cp / pp / ep / etp / HSDP / ZeRO / cp_comm_type x 5 algorithms x
7 node shapes. Prints the configs the config rules take, those that run, those refused up
front, those refused only when priced ("under") and those refused up front that the pricer
runs ("over": must be 0), each kind with one example.

    PYTHONPATH=src python benchmarks/forced_grid62.py [SEED] [DRAWS] [--examples]
"""

from __future__ import annotations

import copy
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_checks import BASES

from trainsim.catalog import run_config_from_dict
from trainsim.errors import ConfigError, TrainsimError
from trainsim.network.forced_algo import forced_algo_problem
from trainsim.simulator import _simulate


def refusals(cfg, catch: type[Exception] = TrainsimError) -> tuple[str | None, str | None]:
    """``cfg``'s up-front refusal of its forced algorithm (``network.forced_algo``) and the
    pricer's (``simulator._simulate``, which skips the up-front check; ``catch``: the errors
    read as its refusal), each None where there is none."""
    refused = forced_algo_problem(cfg)
    try:
        _simulate(cfg, False, None, None)
        return refused, None
    except catch as exc:
        return refused, str(exc)


def assert_refused_alike(cfg, algo: str) -> None:
    """Each up-front refusal of ``algo`` is one the pricer gives too, in its words (the tests'
    check; where the pricer runs the run, nothing is refused up front)."""
    up_front, priced = refusals(cfg, ConfigError)
    if up_front is not None:
        assert priced is not None, up_front
        assert priced.startswith(f"cluster.nccl_algo={algo}: algorithm '{algo}' cannot run ")


FRAMEWORKS = [None, "megatron-core", "nemo", "torchtitan", "deepspeed", "maxtext", "megatron-lm",
              "pytorch", "internevo", "automodel", "olmo-core", "nanotron", "llm-foundry", "paxml",
              "megatron-deepspeed", "megatron-bridge"]


def draw(rng: random.Random) -> dict:
    base = rng.choice(["dense", "moe", "mla"])
    raw = copy.deepcopy(BASES[base])
    algo = rng.choice(["tree", "nvls", "nvls_tree", "collnet", "pat"])
    gpus, gpn = rng.choice([(16, 8), (16, 1), (16, 2), (32, 8), (8, 8), (16, 4), (32, 4)])
    raw["cluster"].update(num_gpus=gpus, gpus_per_node=gpn, nccl_algo=algo)
    if algo == "collnet" or rng.random() < 0.2:
        raw["cluster"]["in_network_reduction"] = True
    p = raw["parallel"]
    p.update(tp=rng.choice([1, 2, 4]), cp=rng.choice([1, 1, 2]), pp=rng.choice([1, 1, 2]))
    p.pop("vpp", None)
    p["sequence_parallel"] = p["tp"] > 1 and rng.random() < 0.6
    if base == "moe":
        p.update(ep=rng.choice([1, 2, 4]), etp=rng.choice([1, 1, 2]))
    r = rng.random()
    if r < 0.2:
        p.update(dp_replicate=2, zero_stage=rng.choice([1, 3]),
                 data_parallel_impl=rng.choice(["fsdp2", "megatron", "fsdp1"]))
        if rng.random() < 0.2:
            p["zero1_grad_reduce"] = "all_reduce"
    elif r < 0.35:
        p.update(zero_stage=rng.choice([1, 2, 3]))
    elif r < 0.5:
        p.update(distributed_optimizer=True)
    if p["cp"] > 1 and rng.random() < 0.5:
        p["cp_comm_type"] = rng.choice(["p2p", "a2a", "allgather", "a2a+p2p"])
    if (fw := rng.choice(FRAMEWORKS)) is not None:
        raw["training"]["framework"] = fw
    raw["training"]["global_batch_size"] = 32
    return raw


def main(argv: list[str]) -> int:
    numbers = [int(a) for a in argv if not a.startswith("--")]
    seed = numbers[0] if numbers else 0
    draws = numbers[1] if len(numbers) > 1 else 2000
    rng = random.Random(seed)
    over: dict = {}
    under: dict = {}
    n = ran = up = late = 0
    for _ in range(draws):
        raw = draw(rng)
        try:
            cfg = run_config_from_dict(raw)
        except TrainsimError:
            continue
        n += 1
        refused, priced = refusals(cfg)
        up += refused is not None
        if refused is not None and priced is None:
            over.setdefault(refused[:90], raw)
        elif refused is None and priced is not None and priced.startswith("cluster.nccl_algo"):
            late += 1
            under.setdefault(priced[:110], raw)
        ran += refused is None and priced is None
    print(f"seed {seed}: {n} configs, {ran} ran, {up} refused up front, {late} refused only when "
          f"priced ({len(under)} kinds), {len(over)} refused up front that the pricer runs")
    if "--examples" in argv:
        for what, table in (("over", over), ("under", under)):
            for text, raw in table.items():
                print(what, text, raw["training"].get("framework"), raw["cluster"]["gpus_per_node"],
                      raw["parallel"])
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
