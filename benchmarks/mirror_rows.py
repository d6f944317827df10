"""What the check-file generators share: the format-v2 columns they write (``v2_header``) and,
for those that re-read their source from a repository mirror, the mirror's git dir, a file at a
commit, and the command line (print the CSV, or ``--check`` the typed-in table against the
mirror: exit 1 listing each difference)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

V2_COLUMNS = (
    "id", "source", "model", "hidden_size", "num_layers", "num_attention_heads", "num_kv_heads",
    "head_dim", "ffn_hidden_size", "vocab_size", "seq_length", "activation", "num_experts",
    "moe_top_k", "moe_ffn_hidden_size", "gpu", "num_gpus", "gpus_per_node", "nic_gbps_per_gpu",
    "tp", "pp", "cp", "ep", "vpp", "sequence_parallel", "recompute", "zero_stage",
    "distributed_optimizer", "global_batch_size", "micro_batch_size", "dtype", "options",
    "framework", "framework_version", "attention", "grad_reduce_dtype", "recompute_num_layers",
    "recompute_modules", "pipeline_layout", "fp8_recipe", "cp_comm_type", "moe_dispatcher",
    "moe_capacity_factor", "memory_kind", "measured_iteration_s", "measured_peak_memory_gib",
    "note",
)
"""The format-v2 training columns every check-file generator writes, in the order they write them."""


def v2_header(**after: list[str]) -> list[str]:
    """``V2_COLUMNS`` with each generator's own columns put after the column that names them
    (``v2_header(note=["attention_dropout"])``)."""
    unknown = set(after) - set(V2_COLUMNS)
    if unknown:
        raise ValueError(f"no column {sorted(unknown)} in V2_COLUMNS")
    return [c for col in V2_COLUMNS for c in (col, *after.get(col, []))]


def mirror(repo: str) -> Path:
    """The git dir of ``repo`` (``owner+name``) under ``$TRAINSIM_MIRRORS`` (default /work/.mirror)."""
    return Path(os.environ.get("TRAINSIM_MIRRORS", "/work/.mirror")) / repo / "repo"


def show(repo: str, commit: str, path: str) -> str:
    """``path`` at ``commit`` in the mirror of ``repo``."""
    return subprocess.run(["git", "--git-dir", str(mirror(repo)), "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def md_cells(line: str) -> list[str]:
    """The cells of one Markdown table line ("| a | b |" -> ["a", "b"]), each stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def main(rows: Callable[[], Iterable[dict]], header: list[str],
         check: Callable[[], list[str]], same: str) -> None:
    """``--check``: print ``check()``'s differences (``same`` where none) and exit 1 on any;
    otherwise write ``rows()`` as CSV with ``header`` to stdout."""
    if sys.argv[1:] == ["--check"]:
        bad = check()
        print("\n".join(bad) or same)
        sys.exit(1 if bad else 0)
    w = csv.DictWriter(sys.stdout, fieldnames=header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows())


def restate(path: Path, columns: Iterable[str], stated: Callable[[dict], dict]) -> None:
    """Rewrite the CSV at ``path`` with each row passed through ``stated`` and ``columns`` added
    to its header where missing, keeping the file's line ending (the cell generators' ``--write``)."""
    import io
    with open(path, newline="") as fh:
        raw = fh.read()
    ending = "\r\n" if raw.split("\n", 1)[0].endswith("\r") else "\n"
    rows = list(csv.DictReader(io.StringIO(raw, newline="")))
    header = list(rows[0]) + [c for c in columns if c not in rows[0]]
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=header, lineterminator=ending)
    w.writeheader()
    w.writerows(stated(r) for r in rows)
    with open(path, "w", newline="") as fh:
        fh.write(out.getvalue())


def cells_main(check: Callable[[], list[str]], stated: Callable[[dict], dict],
               columns: Iterable[str], same: str, usage: str) -> None:
    """A cell generator's command line: ``--check`` (print ``check()``'s differences, ``same``
    where none; exit 1 on any) or ``--write FILE.csv ...`` (``restate`` each file)."""
    args = sys.argv[1:]
    if args == ["--check"]:
        bad = check()
        print("\n".join(bad) or same)
        sys.exit(1 if bad else 0)
    if len(args) >= 2 and args[0] == "--write":
        for name in args[1:]:
            restate(Path(name), columns, stated)
        return
    sys.exit(usage)


def lines_differ(entries: Iterable[tuple[str, Iterable[tuple]]], start: str = "") -> list[str]:
    """Each cited line ``(repo, commit, path, line, want)`` of the named entries whose name
    begins with ``start``, against its mirror: one message per line not containing ``want``."""
    bad: list[str] = []
    files: dict[tuple[str, str, str], list[str]] = {}
    for name, lines in entries:
        if not name.startswith(start):
            continue
        for repo, commit, path, line, want in lines:
            key = (repo, commit, path)
            if key not in files:
                files[key] = show(repo, commit, path).splitlines()
            got = files[key][line - 1] if line <= len(files[key]) else ""
            if want not in got:
                bad.append(f"{name}: {repo} {commit} {path} line {line} is {got.strip()!r}, "
                           f"not {want!r}")
    return bad
