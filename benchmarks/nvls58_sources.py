"""NCCL's NVLS buffer rules by release, read from the NVIDIA/nccl mirror (58th session, memory58),
beside what trainsim's ``memory.nccl_buffers`` computes for the same release; then the FlagPerf
rows on NVSwitch GPUs with and without their NCCL release.

    PYTHONPATH=src:benchmarks python benchmarks/nvls58_sources.py           # the source lines
    PYTHONPATH=src:benchmarks python benchmarks/nvls58_sources.py --rows    # + FlagPerf rows

For each tag: the line of ``src/transport/nvls.cc`` that decides which communicators get NVLS
(``gpuCount <= 2``, ``nNodes > 1``), the lines that size the buffer (``buffSize``, ``memSize``,
``nvlsPerRankSize``, ``nvlsTotalSize``), ``NCCL_NVLS_NCHANNELS``'s default, and
``NCCL_MAX_NVLS_ARITY`` (src/include/device.h); then trainsim's bytes a head on SM90.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import mirror_rows

ROOT = Path(__file__).resolve().parents[1]
NCCL = "NVIDIA+nccl"
TAGS = ("v2.17.1-1", "v2.18.5-1", "v2.19.4-1", "v2.20.5-1", "v2.21.5-1", "v2.22.3-1",
        "v2.23.4-1", "v2.25.1-1", "v2.27.3-1", "v2.28.3-1")
PATTERNS = (r"gpuCount <= 2|localRanks <= 1", r"size_t buffSize = |buffSize = nvlsStepSize",
            r"size_t memSize = NVLS_MEM|nvlsPerRankSize = ", r"nvlsTotalSize = nvlsPerRankSize",
            r'NCCL_PARAM\(NvlsChannels|define NVLS_NCHANNELS_SM')


def source_lines(tag: str) -> list[str]:
    """The lines of nvls.cc at ``tag`` that ``PATTERNS`` name, with their line numbers."""
    text = mirror_rows.show(NCCL, tag, "src/transport/nvls.cc")
    return [f"L{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1)
            if any(re.search(p, line) for p in PATTERNS)]


def arity(tag: str) -> str:
    out = subprocess.run(["git", "--git-dir", str(mirror_rows.mirror(NCCL)), "grep", "-h",
                          "define NCCL_MAX_NVLS_ARITY", tag, "--", "src"],
                         capture_output=True, text=True, check=False).stdout.split()
    return out[-1] if out else "?"


def table() -> list[str]:
    from trainsim.config.nccl_release import nccl_release
    from trainsim.memory.nccl_buffers import nvls_head_bytes

    out = []
    for tag in TAGS:
        release = nccl_release(tag)
        one = nvls_head_bytes(release, 90, False) / 2**20
        out.append(f"== {tag}: trainsim {one:.0f} MiB a head on SM90; NCCL_MAX_NVLS_ARITY "
                   f"{arity(tag)}")
        out += ["   " + line for line in source_lines(tag)]
    return out


def rows() -> list[str]:
    """FlagPerf's rows on NVSwitch GPUs: nvidia-smi's GiB, trainsim's device figure with the
    row's NCCL release and without it (the NVLS buffers not counted)."""
    import csv
    import warnings

    from trainsim.validate.training import predict_training_row

    out = ["| row | nccl | measured GiB | without NVLS | with | error without | error with |",
           "|---|---|---|---|---|---|---|"]
    for row in csv.DictReader((ROOT / "benchmarks" / "training_flagperf.csv").open()):
        if not row["gpu"].startswith(("h100", "h800")):
            continue
        meas = float(row["measured_peak_memory_gib"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = [predict_training_row(dict(row, nccl_version=v)).predicted_memory_gib
                   for v in ("", row["nccl_version"])]
        out.append(f"| {row['id'][9:]} | {row['nccl_version']} | {meas:.0f} | {got[0]:.1f} | "
                   f"{got[1]:.1f} | {100 * (got[0] / meas - 1):+.1f} % | "
                   f"{100 * (got[1] / meas - 1):+.1f} % |")
    return out


if __name__ == "__main__":
    if not mirror_rows.mirror(NCCL).exists():
        print("(NVIDIA/nccl mirror absent: source lines skipped)")
    else:
        print("\n".join(table()))
    if "--rows" in sys.argv:
        print()
        print("\n".join(rows()))
