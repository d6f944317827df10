"""What the check-file generators that re-read their source from a repository mirror share:
the mirror's git dir, a file at a commit, and the command line (print the CSV, or ``--check``
the typed-in table against the mirror: exit 1 listing each difference)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path


def mirror(repo: str) -> Path:
    """The git dir of ``repo`` (``owner+name``) under ``$TRAINSIM_MIRRORS`` (default /work/.mirror)."""
    return Path(os.environ.get("TRAINSIM_MIRRORS", "/work/.mirror")) / repo / "repo"


def show(repo: str, commit: str, path: str) -> str:
    """``path`` at ``commit`` in the mirror of ``repo``."""
    return subprocess.run(["git", "--git-dir", str(mirror(repo)), "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


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
