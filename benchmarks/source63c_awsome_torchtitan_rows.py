"""Writes benchmarks/training_awsome_torchtitan.csv: AWS's aws-samples/awsome-distributed-training
torchtitan test case (3.test_cases/pytorch/torchtitan/slurm/README.md @ 4f688dd4, 2025-03-31,
"Performance Numbers"): two torchtitan log lines of Llama 3 8B on 4 x p5.48xlarge (32 H100), the
default llama3_8b.toml (6,785 tps, 68.57 GiB) and that config with ``compile = true`` and a
``[float8]`` section (7,865 tps, 63.48 GiB). A source trainsim had not read: AWS's own run of
torchtitan's preset on its own instances.

    python benchmarks/source63c_awsome_torchtitan_rows.py > benchmarks/training_awsome_torchtitan.csv
    python benchmarks/source63c_awsome_torchtitan_rows.py --check

What the rows read. The run script (1.llama_3_8b_torchtitan.sh) launches torchtitan's own
``torchtitan/models/llama/train_configs/llama3_8b.toml`` on 8 GPUs a node; 0.create_conda_env.sh
clones torchtitan's main and installs torch / torchao nightlies (cu124). The logs are dated
2025-03-04, so the config read is torchtitan's at the last commit before that day (``TT_COMMIT``,
2025-03-03): batch_size 1, seq_len 8192, data_parallel_shard_degree -1 (FSDP over all 32 ranks),
tensor / context / pipeline degree 1, selective per-op activation checkpointing, compile false,
mixed_precision_reduce float32 (config_manager.py default). torchtitan's ``tps`` (train.py
L374-375 there) is this rank's tokens over the window's time times the non-data-parallel size (1):
tokens a GPU a second, so a step is 8192 / tps s. ``memory`` is the peak reserved memory
(tools/metrics.py L56-64: ``reserved_bytes.all.peak``). The second line's ``[float8]
enable_float8_linear = true`` had been removed from torchtitan's config on 2025-02-14 (#823,
57387af0e: float8 became the ``model.converters = "float8"`` converter), and the TOML loader then
merged unknown keys without a word (config_manager.py L732-734 at ``TT_COMMIT``: ``args_dict[k] |=
v``): no Float8Linear was applied, and ``enable_fsdp_float8_all_gather`` /
``precompute_float8_dynamic_scale_for_fsdp`` act only on Float8Linear weights. So that row is read
as bf16 with compile (an inference from the code, stated in the note).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mirror_rows

HEADER = mirror_rows.v2_header()
AWS_DIR, AWS = "aws-samples+awsome-distributed-training", "aws-samples/awsome-distributed-training"
TT_DIR = "pytorch+torchtitan"
COMMIT = "4f688dd4"
"""The README's last change (2025-03-31, "update readme and deprecate test cases (#620)")."""
TT_COMMIT = "989718967"
"""torchtitan's last commit before 2025-03-04 (2025-03-03), the day of the logs."""
CASE = "3.test_cases/pytorch/torchtitan/slurm"
SEQ, GPUS = 8192, 32
LINES = {
    "default": ("memory: 68.57GiB(86.69%)", "tps: 6,785", "mfu: 39.73%"),
    "compile": ("memory: 63.48GiB(80.25%)", "tps: 7,865", "mfu: 46.06%"),
}


def _num(cell: str) -> float:
    return float(cell.split(":")[1].split("GiB")[0].replace(",", "").rstrip("%"))


def rows() -> list[dict[str, object]]:
    out = []
    for name, (mem, tps_cell, mfu) in LINES.items():
        tps = _num(tps_cell)
        r = {k: "" for k in HEADER}
        r.update(
            id=f"awstt2503-llama3-8b-h100-{GPUS}-{name}", model="llama3-8b", seq_length=SEQ,
            activation="swiglu", gpu="h100-sxm-80gb", num_gpus=GPUS, gpus_per_node=8,
            nic_gbps_per_gpu=400, tp=1, pp=1, cp=1, ep=1, sequence_parallel=0,
            recompute="selective", zero_stage=3, distributed_optimizer=0, global_batch_size=GPUS,
            micro_batch_size=1, dtype="bf16", options="compile" if name == "compile" else "",
            framework="torchtitan", framework_version="2025-03-03", memory_kind="reserved",
            measured_iteration_s=round(SEQ / tps, 4), measured_peak_memory_gib=_num(mem),
            source=(f"{AWS} {CASE}/README.md @ {COMMIT} (2025-03-31) 'Performance Numbers', the "
                    f"{'default' if name == 'default' else 'optimized (compile + [float8])'} "
                    "log lines of 2025-03-04; the config is pytorch/torchtitan "
                    f"torchtitan/models/llama/train_configs/llama3_8b.toml @ {TT_COMMIT} "
                    "(2025-03-03)"),
            note=(f"published '{tps_cell}' ({mfu}, {mem}) at step 1990 on every rank of 4 x "
                  "p5.48xlarge (8 H100 each, 3200 Gb/s EFA an instance: 400 a GPU): "
                  f"{SEQ} tokens a rank a step / {tps:.0f} = {SEQ / tps:.4f} s (torchtitan's tps: "
                  "this rank's tokens over the 10-step window, train.py L374-375); memory is "
                  "torchtitan's max_reserved_gib (tools/metrics.py L56-64); llama3_8b.toml: "
                  "batch_size 1, seq_len 8192, data_parallel_shard_degree -1 (FSDP2 over 32), "
                  "tp / cp / pp 1, activation_checkpoint selective 'op', mixed_precision_reduce "
                  "float32 (default), AdamW; torch nightly cu124 of early 2025-03 "
                  "(0.create_conda_env.sh)"
                  + ("; compile false (the toml)" if name == "default" else
                     "; compile = true; the README's [float8] enable_float8_linear = true was a "
                     "key torchtitan had removed on 2025-02-14 (#823, float8 became "
                     "model.converters) and its TOML loader merged unknown keys silently "
                     "(config_manager.py L732-734 @ 989718967): read as bf16 with compile "
                     "(enable_fsdp_float8_all_gather acts only on Float8Linear weights)")))
        out.append(r)
    return out


def check() -> list[str]:
    """The two log lines and the hardware sentence at ``COMMIT``; the run and env scripts; the
    torchtitan config, tps formula, memory metric, reduce default and TOML merge at ``TT_COMMIT``;
    that ``enable_float8_linear`` is no key of torchtitan's parser there."""
    bad = []
    readme = mirror_rows.show(AWS_DIR, COMMIT, f"{CASE}/README.md")
    for cells in LINES.values():
        if not any(all(c in line for c in cells) and "step: 1990" in line
                   for line in readme.splitlines()):
            bad.append(f"README.md @ {COMMIT}: no step-1990 line with {cells}")
    flat = " ".join(readme.split())
    for want in ("on 4 x p5.48xlarge instances (each instance contains 8 x H100 GPUs)",
                 "compile = true", "enable_float8_linear = true",
                 "Running the llama3_8b.toml default configuration"):
        if want not in flat:
            bad.append(f"README.md @ {COMMIT}: no {want!r}")
    run = mirror_rows.show(AWS_DIR, COMMIT, f"{CASE}/1.llama_3_8b_torchtitan.sh")
    if "train_configs/llama3_8b.toml" not in run or "GPUS_PER_NODE=8" not in run:
        bad.append(f"1.llama_3_8b_torchtitan.sh @ {COMMIT}: not llama3_8b.toml on 8 GPUs a node")
    env = mirror_rows.show(AWS_DIR, COMMIT, f"{CASE}/0.create_conda_env.sh")
    if "git clone https://github.com/pytorch/torchtitan" not in env or "nightly/cu124" not in env:
        bad.append(f"0.create_conda_env.sh @ {COMMIT}: not torchtitan main on a cu124 nightly")
    toml = " ".join(mirror_rows.show(
        TT_DIR, TT_COMMIT, "torchtitan/models/llama/train_configs/llama3_8b.toml").split())
    for want in ('flavor = "8B"', "batch_size = 1", "seq_len = 8192",
                 "data_parallel_replicate_degree = 1", "data_parallel_shard_degree = -1",
                 "tensor_parallel_degree = 1", "compile = false", "context_parallel_degree = 1",
                 "pipeline_parallel_degree = 1", "mode = 'selective'", "selective_ac_option = 'op'"):
        if want not in toml:
            bad.append(f"llama3_8b.toml @ {TT_COMMIT}: no {want!r}")
    train = " ".join(mirror_rows.show(TT_DIR, TT_COMMIT, "torchtitan/train.py").split())
    if "tps = ntokens_since_last_log / ( time_delta * parallel_dims.non_data_parallel_size" \
            not in train:
        bad.append(f"train.py @ {TT_COMMIT}: tps is not tokens a rank a second")
    metrics = mirror_rows.show(TT_DIR, TT_COMMIT, "torchtitan/tools/metrics.py")
    if 'max_reserved = device_info["reserved_bytes.all.peak"]' not in metrics:
        bad.append(f"tools/metrics.py @ {TT_COMMIT}: memory is not the reserved peak")
    cm = mirror_rows.show(TT_DIR, TT_COMMIT, "torchtitan/config_manager.py")
    flat_cm = " ".join(cm.split())
    if "args_dict[k] |= v" not in flat_cm:
        bad.append(f"config_manager.py @ {TT_COMMIT}: TOML sections are not merged as read")
    if "enable_float8_linear" in cm:
        bad.append(f"config_manager.py @ {TT_COMMIT}: enable_float8_linear is still a key")
    if '"--training.mixed_precision_reduce", type=str, default="float32"' not in flat_cm:
        bad.append(f"config_manager.py @ {TT_COMMIT}: the reduce default is not float32")
    return bad


if __name__ == "__main__":
    mirror_rows.main(rows, HEADER, check, "log lines, scripts and torchtitan config as in the mirrors")
