"""The web UI draws a sweep job's rows as a table: its result is ``search.render.sweep_json``'s
object ({varied, rows, warnings}), no longer a bare list. Runs the UI's own ``genericResult``
from pages.js under Node with a stub DOM; skips where Node is missing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from trainsim.search.render import sweep_json

PAGES = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "service" / "static" / "pages.js"


def _drawn(result: object) -> list[str]:
    """The tags ``genericResult`` appends for a job whose result is ``result``."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("no Node.js to run pages.js")
    text = PAGES.read_text(encoding="utf-8")
    body = text[text.index("function genericResult"):text.index("function plotImage")]
    script = ("const h = (tag, attrs, ...kids) => ({tag, attrs, kids: kids.flat()});\n"
              "const root = {items: [], append(...x) { this.items.push(...x); }};\n"
              f"{body}\ngenericResult({{result: {json.dumps(result)}}}, root);\n"
              "console.log(JSON.stringify(root.items.map(x => x.tag)));")
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60,
                         check=True)
    return json.loads(out.stdout)


def test_a_sweep_result_is_drawn_as_a_table_with_its_warnings():
    rows = [{"cluster.nvlink_gbyte_s": 300, "iteration_time_s": 1.5},
            {"cluster.nvlink_gbyte_s": 900, "iteration_time_s": 1.2}]
    result = json.loads(sweep_json(rows, ["cluster.nvlink_gbyte_s"], ["300 given twice"]))
    assert _drawn(result) == ["p", "table", "pre"]
    assert _drawn(json.loads(sweep_json(rows, ["cluster.nvlink_gbyte_s"]))) == ["table", "pre"]
    assert _drawn(rows) == ["table", "pre"]  # a bare list of rows, as before
    assert _drawn({"n": 1}) == ["pre"]  # anything else: the JSON alone
