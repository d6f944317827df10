"""collfab61: ``trainsim collective --fabric`` / ``--node`` (robust61's Lead 3: TCPX / EFA
collectives could not be priced from the CLI), refused as the config path refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainsim.cli import main


def _run(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["collective", "--sizes", "16M:16M", "--gpus", "16",
                                  "--format", "json", *args])
    return r.exit_code, r.output


def _row(*args: str) -> dict:
    code, text = _run(*args)
    assert code == 0, text
    return json.loads(text)[0]


def test_fabric_tcpx_prices_ring_simple_slower_than_infiniband():
    ib, tcpx = _row(), _row("--fabric", "tcpx")
    assert (tcpx["algorithm"], tcpx["protocol"]) == ("ring", "Simple")
    assert ib["algorithm"] != "ring"
    assert tcpx["time_us"] > ib["time_us"]


def test_fabric_efa_priced_apart_and_roce_as_infiniband():
    ib, efa, roce = _row(), _row("--fabric", "efa"), _row("--fabric", "RoCE")
    assert efa["time_us"] != ib["time_us"]
    assert roce == ib


def test_forced_tree_or_ll128_on_tcpx_refused_in_one_line():
    for args, word in ((("--fabric", "tcpx", "--algorithm", "tree"), "--algorithm=tree"),
                       (("--fabric", "tcpx", "--protocol", "LL128"), "--protocol=LL128")):
        code, text = _run(*args)
        assert code != 0
        assert word in text and "--fabric=tcpx" in text
        assert len(text.strip().splitlines()) == 1
    assert _row("--fabric", "tcpx", "--algorithm", "ring")["algorithm"] == "ring"


def test_fabric_tcpx_on_the_flow_backend_refused_as_the_config_is():
    code, text = _run("--fabric", "tcpx", "--backend", "flow")
    assert code != 0 and "analytical network backend only" in text


def test_unknown_fabric_refused():
    code, text = _run("--fabric", "ethernet")
    assert code != 0 and "--fabric" in text


def test_a3_node_presets_fill_the_cluster_and_the_command_line_wins():
    high = _row("--node", "a3-highgpu-8g")
    assert (high["algorithm"], high["protocol"]) == ("ring", "Simple")  # the preset's tcpx
    assert high["time_us"] > _row("--fabric", "tcpx")["time_us"]  # its 100 Gbit/s a GPU
    assert _row("--node", "a3-highgpu-8g", "--fabric", "infiniband")["algorithm"] != "ring"
    mega = _row("--node", "a3-megagpu-8g")  # tcpxo, priced as InfiniBand
    assert mega["algorithm"] != "ring"
    code, text = _run("--node", "a3-highgpu-8g", "--algorithm", "tree")
    assert code != 0 and "--fabric=tcpx" in text
    code, text = _run("--node", "no-such-node")
    assert code != 0 and "unknown node" in text


# ------------------------------------------------- a forced nccl_algo a group of the run cannot run

def _raw(gpus=16, gpn=8, **parallel):
    import copy

    from helpers import SMALL_RUN

    raw = copy.deepcopy(SMALL_RUN)
    raw["cluster"].update(num_gpus=gpus, gpus_per_node=gpn)
    raw["parallel"].update(parallel)
    raw["training"].update(global_batch_size=32)
    return raw


def _with(raw, **cluster):
    import copy

    raw = copy.deepcopy(raw)
    raw["cluster"].update(cluster)
    return raw


def _cfg(raw):
    import copy

    from trainsim.catalog import run_config_from_dict

    return run_config_from_dict(copy.deepcopy(raw))


def _service(raw):
    import copy

    from trainsim.service import Settings
    from trainsim.service.jobs import problem

    return problem("simulate", copy.deepcopy(raw), {}, Settings(workers=0, checkers=0))


SHAPE_REFUSED = [  # (algo, gpus, parallel): tree / PAT inside one node, NVLS across nodes, PAT 2 a node
    ("tree", 8, {"tp": 2}),
    ("nvls", 16, {"tp": 1}),
    ("pat", 16, {"tp": 2}),
    ("nvls_tree", 8, {"tp": 4}),
    ("nvls", 16, {"tp": 4, "gpn": 2}),  # the tensor-parallel group over 2 nodes
]


@pytest.mark.parametrize(("algo", "gpus", "parallel"), SHAPE_REFUSED)
def test_the_service_refuses_a_shape_bound_forced_algorithm_before_queueing(algo, gpus, parallel):
    """main's job check took these (only pricing refused them), so the service queued them."""
    from trainsim.errors import ConfigError
    from trainsim.simulator import simulate

    raw = _with(_raw(gpus, **parallel), nccl_algo=algo)
    refused = _service(raw)
    assert refused is not None and refused[0] == 422
    assert refused[2].startswith(f"cluster.nccl_algo={algo}: algorithm '{algo}' cannot run ")
    with pytest.raises(ConfigError) as exc:  # simulate: the same line, before any pricing
        simulate(_cfg(raw))
    assert str(exc.value) == refused[2]


def test_search_set_refuses_alike():
    from helpers import cli, one_error_line

    r = cli("search", "gpt3-350m", "--gpus", "8", "--global-batch", "16", "--seq", "512",
            "--workers", "1", "--max-micro-batch", "1", "--tp", "1", "--pp", "1", "--overlap",
            "off", "--zero", "0", "--format", "json", "--top", "1",
            "--set", "cluster.nccl_algo=pat")
    line = one_error_line(r)
    raw = _with(_raw(8, tp=1, distributed_optimizer=False, sequence_parallel=False),
                nccl_algo="pat")
    refused = _service(raw)
    assert refused is not None
    # robust62: the search skips each layout that cannot run it and says so when none can,
    # the split's refusal in the simulate job's words
    assert line.split("error: ")[-1].endswith(f"e.g. TP1 PP1 DP8 mb1: {refused[2]}")


@pytest.mark.parametrize("algo", ["tree", "nvls", "nvls_tree", "pat", "collnet", "ring"])
@pytest.mark.parametrize(("gpus", "parallel"), [
    (8, {"tp": 4}), (16, {"tp": 4}), (16, {"tp": 1, "distributed_optimizer": False}),
    (16, {"tp": 1, "distributed_optimizer": True}), (32, {"tp": 4, "pp": 2}),
    (16, {"tp": 2, "cp": 2}), (16, {"tp": 4, "gpn": 2}), (16, {"tp": 1, "gpn": 1}),
    (16, {"tp": 2, "dp_replicate": 2, "zero_stage": 3, "data_parallel_impl": "fsdp2"}),
])
def test_nothing_the_pricer_runs_is_refused_up_front(algo, gpus, parallel):
    """Each up-front refusal is one the pricer gives too (``simulator._simulate``, which skips
    the up-front check); where the pricer runs it, nothing is refused."""

    cluster = {"nccl_algo": algo}
    if algo == "collnet":
        cluster["in_network_reduction"] = True
    cfg = _cfg(_with(_raw(gpus, **parallel), **cluster))
    from helpers import load_script

    grid = load_script(Path(__file__).resolve().parents[1] / "benchmarks" / "forced_grid62.py")
    grid.assert_refused_alike(cfg, algo)


def test_tree_across_nodes_runs_and_auto_is_never_checked():
    from trainsim.network.forced_algo import forced_algo_problem
    from trainsim.simulator import simulate

    raw = _raw(16, tp=1, distributed_optimizer=False, sequence_parallel=False)
    tree = _cfg(_with(raw, nccl_algo="tree"))  # dp 16 across 2 nodes: tree's all_reduce
    assert forced_algo_problem(tree) is None and _service(_with(raw, nccl_algo="tree")) is None
    assert simulate(tree).iteration_time_s > 0
    assert forced_algo_problem(_cfg(raw)) is None
