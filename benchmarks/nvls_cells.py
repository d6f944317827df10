"""The dgxc-benchmarking check files' ``nvls`` cells: 0 where the run's launch turned NVLink
SHARP off (``NCCL_NVLS_ENABLE=0``, which the column carries to ``ClusterConfig.nvls``), each from
the line that sets it for the row's workload at the row's release:

- v24.11.1 (35a9aecc8d) and v25.02 (8f5cbb3799), NeMo-Framework-Launcher workloads: each
  workload's configure.sh (GPT-3 175B's launch.sh at v24.11.1) exports it, sourced by the
  launch.sh that starts the run.
- v25.04 (741c886025): llama3.1/llama31_utils.py, the release's own executor for its
  scripts.performance.llm.pretrain_llama31, sets it in the job's environment; its Nemotron-4
  launch runs NeMo d2b21556f2's scripts.performance.llm.pretrain_nemotron4_* (below).
- v25.04's Nemotron-4 and v25.05 (68eaf7e117), v25.05.01 (60d6fd3), v25.05.02 (dfc8039), v25.05.05 (c5c765f): launch.sh
  runs NeMo's scripts.performance.llm.pretrain_* with the ``slurm`` executor of the NeMo commit
  setup.sh checks out (NEMO_COMMIT); that slurm_executor (scripts/performance/utils.py) puts
  ``"NCCL_NVLS_ENABLE": "0"`` ("Disable NVLink SHARP to save memory") in every job's
  environment, and the scripts' own env_vars (NVTE norms, NCCL_NET_GDR_LEVEL on GB200) do not
  set it back.

On H100 the cells change no prediction (the rows' data-parallel groups hold one GPU a node);
on GB200's 72-GPU NVLink domain they take NVLS off the collectives NCCL would run with it.
The same executor default holds for the NeMo 2 performance summary (training_nemo_perf.csv)
and Megatron-Bridge's performance scripts (utils/executors.py, back on only with nccl_ub):
not stated here (RESULTS 61st session, cells61, Leads).

    python benchmarks/nvls_cells.py --check            # every cited line against the mirrors
    python benchmarks/nvls_cells.py --write FILE.csv   # fill a hand-kept file's cells in place

The generators (dgxc2502_rows.py, dgxc2505_rows.py, dgxc_grok1_rows.py, dgxc_grok1_2505_rows.py,
dgxc_llama31_2505_rows.py, dgxc_llama4_rows.py, dgxc_nemotronh_rows.py) call :func:`stated` on each
row;
training_dgxc.csv has no generator and was filled with ``--write``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

DGXC = "NVIDIA+dgxc-benchmarking"
NEMO = "NVIDIA+NeMo"
COLUMN = "nvls"
EXPORT = "export NCCL_NVLS_ENABLE=0"
ENV = '"NCCL_NVLS_ENABLE": "0"'
NEMO_COMMITS = {"7a8f1cc7bc": ("7a8f1cc7bc40a84447c0681a9e4e956a135ae8a2", 75),
                "b4148d2169": ("b4148d21695de467d50ebf050566555429c26919", 75),
                "6f2c6fdaff": ("6f2c6fdaffcc0af97a9e2219fcc104e2399627e4", 75),
                "d2b21556f2": ("d2b21556f2455b52ad7217f334bb66eaa13c0f83", 66)}
"""NeMo commits the v25.04 / v25.05 releases check out: (full hash, the line of scripts/
performance/utils.py slurm_executor that sets the variable; v25.04's gsw_nemo.patch changes that
function's mounts and packager, not its environment)."""


def _launcher(commit: str, path: str, line: int) -> tuple[str, tuple]:
    return (f"NVIDIA/dgxc-benchmarking@{commit} {path} L{line} '{EXPORT}'",
            ((DGXC, commit, path, line, EXPORT),))


def _nemo2(commit: str, workload: str, setup_line: int, nemo: str) -> tuple[str, tuple]:
    """A NeMo 2 workload (v25.04 Nemotron-4, v25.05.x): its setup.sh's NEMO_COMMIT line and that NeMo's slurm_executor."""
    full, line = NEMO_COMMITS[nemo]
    setup = f"{workload}/setup.sh"
    util = "scripts/performance/utils.py"
    cite = (f"NVIDIA/dgxc-benchmarking@{commit} {setup} L{setup_line} (NEMO_COMMIT {nemo}): "
            f"NVIDIA/NeMo@{nemo} {util} L{line} slurm_executor {ENV}")
    return (cite,
            ((DGXC, commit, setup, setup_line, f'NEMO_COMMIT="{full}"'),
             (NEMO, nemo, util, line, ENV)))


# (row id prefix, workload word in the id) -> (citation, ((mirror, commit, path, line, text)))
STATED = {
    **{("dgxc2411-", w): _launcher("35a9aecc8d", p, n) for w, p, n in (
        ("nemotron4", "nemotron/configure.sh", 28), ("llama3.1", "llama3.1/configure.sh", 43),
        ("gpt3", "nemo_megatron/launch.sh", 52), ("grok1", "grok1/configure.sh", 26))},
    **{("dgxc2502-", w): _launcher("8f5cbb3799", p, n) for w, p, n in (
        ("nemotron4", "nemotron/configure.sh", 28), ("llama3.1", "llama3.1/configure.sh", 43),
        ("gpt3", "nemo_megatron/configure.sh", 28), ("grok1", "grok1/configure.sh", 26))},
    ("dgxc2504-", "llama3.1"): (
        f"NVIDIA/dgxc-benchmarking@741c886025 llama3.1/llama31_utils.py L65 {ENV}",
        ((DGXC, "741c886025", "llama3.1/llama31_utils.py", 65, ENV),)),
    ("dgxc2504-", "nemotron4"): _nemo2("741c886025", "nemotron", 37, "d2b21556f2"),
    ("dgxc2505-", "llama3.1"): _nemo2("68eaf7e117", "llama3.1", 54, "7a8f1cc7bc"),
    ("dgxc2505-", "nemotron4"): _nemo2("68eaf7e117", "nemotron", 54, "b4148d2169"),
    ("dgxc2505-", "deepseek"): _nemo2("68eaf7e117", "deepseek_v3/pretraining", 54, "7a8f1cc7bc"),
    ("dgxc2505-", "llama4"): _nemo2("68eaf7e117", "llama4", 56, "7a8f1cc7bc"),
    ("dgxc2505-", "nemotron-h"): _nemo2("68eaf7e117", "nemotronh", 53, "7a8f1cc7bc"),
    ("dgxc2505-", "grok1"): _nemo2("dfc8039", "grok1", 55, "6f2c6fdaff"),
    ("dgxc250501-", "llama3.1"): _nemo2("60d6fd3", "llama3.1", 54, "6f2c6fdaff"),
}
RELEASE_ROWS = {"c5c765f": _nemo2("c5c765f", "deepseek_v3/pretraining", 54, "7a8f1cc7bc")}
"""A row read from a later release's README (its source names the commit): that release's
setup line (dgxc2505-deepseek-v3-bf16-h100-512, v25.05.05)."""


def source_of(row: dict) -> tuple | None:
    """The STATED entry of ``row`` (None: its launch is not read here)."""
    row_id = str(row["id"])
    hits = [v for (prefix, word), v in STATED.items()
            if row_id.startswith(prefix) and f"-{word}" in row_id]
    if len(hits) > 1:
        raise ValueError(f"{row_id}: more than one entry")
    if hits:
        for commit, entry in RELEASE_ROWS.items():
            if f"@ {commit}" in str(row.get("source", "")):
                return entry
    return hits[0] if hits else None


def clause(cite: str) -> str:
    """The note's account of the cell."""
    return f"; NVLink SHARP off (nvls 0): {cite}"


def stated(row: dict) -> dict:
    """``row`` with its ``nvls`` cell (and a clause at the end of its note) where its launch
    turns NVLS off; the cell empty otherwise (on where the GPU's NVSwitch has it)."""
    out = {**row, COLUMN: ""}
    src = source_of(row)
    if src is None:
        return out
    cite, _ = src
    out[COLUMN] = 0
    text = clause(cite)
    if text not in str(out["note"]):
        out["note"] = f"{out['note']}{text}"
    return out


def check(start: str = "") -> list[str]:
    """Each cited line (of the prefixes that begin with ``start``) against its mirror (empty:
    all as typed)."""
    entries = [(prefix + word, v[1]) for (prefix, word), v in STATED.items()]
    entries += [(f"release {k}", v[1]) for k, v in RELEASE_ROWS.items()]
    return mirror_rows.lines_differ(entries, start)

def write(path: Path) -> None:
    """Add the column to the CSV at ``path``, each row as ``stated`` says, keeping its line ending."""
    mirror_rows.restate(path, (COLUMN,), stated)


def main() -> None:
    mirror_rows.cells_main(check, stated, (COLUMN,), "every NVLS line as in the mirrors",
                           "usage: nvls_cells.py --check | --write FILE.csv ...")


if __name__ == "__main__":
    main()
