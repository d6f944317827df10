"""collfab61: ``trainsim collective --fabric`` / ``--node`` (robust61's Lead 3: TCPX / EFA
collectives could not be priced from the CLI), refused as the config path refuses."""

from __future__ import annotations

import json

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
