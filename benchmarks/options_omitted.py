"""Rows whose stated options cell leaves out an option their framework turns on by default.

    PYTHONPATH=src python benchmarks/options_omitted.py [FILE.csv ...]   # default: every training file

A stated options cell is the complete list of the run's features (validation README, options:
"features the run used"; ``trainsim.validate.row_settings.stated_options``): a default the cell
leaves out is read as off. That is right where the run turned the default off (the NeMo
Launcher's 24.01 gpt3/175b.yaml, ``overlap_p2p_comm: False``), wrong where the cell was copied
from a recipe file or a command line's flags that never name what the launch left on or turned
on elsewhere (Megatron-LM's ``--no-overlap-p2p-communication`` is the only way to turn the
interleaved pipeline's overlap off; dgxc-benchmarking's nemotron/configure.sh turns on on the
command line what nemotron4-340b-synth.yaml leaves off). Each listed row needs its source read:
``READ`` holds the rows whose source was read and whose cell the source bears out, each with
the file and lines; the rest are printed as open. A default that cannot act on the row is not
listed (``dp_overlap`` without data- or context-parallel ranks, as the validator's warning,
``validate.row_settings._dropped_defaults``). Nothing here changes a row.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from trainsim.validate.row_settings import omitted_defaults

HERE = Path(__file__).resolve().parent

#: rows whose run's source was read (the 60th session, cells60) and bears out the stated cell:
#: the defaults it leaves out were off in the run, or are not expressible in the vocabulary
READ = {
    "launcher2401-gpt3-175b-512":
        "NVIDIA/NeMo-Framework-Launcher@693244ac8c launcher_scripts/conf/training/gpt3/175b.yaml "
        "L108 'overlap_p2p_comm: False' (L149 ub_tp_comm_overlap False); no example script overrides "
        "it (examples/training/gpt/h100/175b_fp8_16node.sh: layout, batch and fp8 only)",
    "simumax-b200-llama3-70b-l8-tp1-pp4-vp2-dp2-mbc8-sync":
        "MooreThreads/SimuMax@4dcaae5 tools/b200/run_megatron_perf_real_batch.py L148 EXTRA_ARGS "
        "'--no-overlap-p2p-communication' (the 'sync' VPP case)",
    "bridge2509-deepseek-v3-1024":
        "public file (not edited here): NVIDIA-NeMo/Megatron-Bridge@v0.1.0rc3 "
        "src/megatron/bridge/training/comm_overlap.py L453-456 turn overlap_p2p_comm on at "
        "PP 8 x VP 4 (training_errata.csv adds pp_overlap); scripts/performance/run_script.py "
        "L94-95 turn overlap_grad_reduce off on H100 while comm_overlap.py L542-545 "
        "(_get_optimizer_overlap_cfgs) and recipes/deepseek/deepseek_v3.py L273 leave "
        "overlap_param_gather on at DP > 1: the errata states that half of dp_overlap "
        "(option overlap_param_gather, the 61st session)",
}


def can_act(option: str, row: dict[str, str]) -> bool:
    """Whether a left-out default would change anything on the row: ``dp_overlap`` needs ranks
    to reduce gradients over (num_gpus > tp x pp, the validator warning's own test)."""
    if option == "dp_overlap":
        return int(row["num_gpus"]) != int(row["tp"] or 1) * int(row["pp"] or 1)
    return True


def omitted(paths: list[Path]) -> list[tuple[str, str, str, str, int]]:
    """(file, row id, stated cell, omitted options, data-parallel size) for each such row."""
    out = []
    for path in paths:
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                try:
                    missing = {o for o in omitted_defaults(row) if can_act(o, row)}
                except Exception as exc:  # noqa: BLE001 - a row validate refuses: say so, go on
                    print(f"{path.name} {row.get('id')}: {exc}", file=sys.stderr)
                    continue
                if missing:
                    tp, pp = int(row["tp"] or 1), int(row["pp"] or 1)
                    dp = int(row["num_gpus"]) // (tp * pp * int(row.get("cp") or 1))
                    out.append((path.name, row["id"], row["options"],
                                ";".join(sorted(missing)), dp))
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or \
        [HERE.parent.parent / "shared/validation/training_public.csv",
         *sorted(HERE.glob("training_*.csv"))]
    rows = omitted([p for p in paths if p.exists()])
    print("| file | row | stated | omitted default | dp | source read |\n|---|---|---|---|---|---|")
    for name, row_id, stated, missing, dp in rows:
        print(f"| {name} | {row_id} | {stated} | {missing} | {dp} | {READ.get(row_id, 'open')} |")
    still = sum(row_id not in READ for _, row_id, *_ in rows)
    print(f"{len(rows)} rows, {len(rows) - still} read, {still} open")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
