"""`trainsim plan`'s table wording at the edges (robust53 lead 2): a far deadline needs a tiny
token rate, not "0 tokens/s"; one node is "1 node", and a count that part-fills a node still
rents that node."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from trainsim.cli import main


def _plan(*extra: str) -> str:
    res = CliRunner().invoke(main, ["plan", "llama3.2-1b", "--tokens", "1e9", "--seq", "4096",
                                    "--global-batch", "64", "--max-micro-batch", "1",
                                    "--workers", "1", *extra])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_a_far_deadline_prints_the_rate_it_needs():
    out = _plan("--days", "1e300", "--max-gpus", "8")
    rate = re.search(r"\(([^ ]+) tokens/s needed\)", out)
    assert rate and float(rate.group(1)) > 0, out
    assert "(1 node of 8)" in out


@pytest.mark.parametrize("per_node", ["4", "16"])
def test_nodes_are_counted_whole(per_node):
    out = _plan("--days", "1e300", "--max-gpus", "8", "--gpus-per-node", per_node)
    gpus = int(re.search(r"GPUs needed │ ([\d,]+) \(", out).group(1).replace(",", ""))
    nodes = int(re.search(r"\((\d+) nodes? of " + per_node + r"\)", out).group(1))
    assert nodes == -(-gpus // int(per_node)) >= 1
