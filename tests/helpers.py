"""What several test modules share, by theme: the CLI run in-process and the fuzzers' settings
(``helpers_cli``), the configs they build (``helpers_configs``), the files they read and the
public files validated once per session (``helpers_files``). Test modules import from here
(or from those), never from each other."""

from __future__ import annotations

from helpers_cli import BASE, FAST, SLOW, cli, load_script, one_error_line, service_problem
from helpers_configs import (
    FP8_SLICE,
    SMALL_RUN,
    TINY_MODEL,
    CommRecorder,
    assert_same_simulation,
    counted_graphs,
    dgx_h100_run,
    fp8_slice_cfg,
    hf_config_read,
    layer_ops,
    loadable_keys,
    make_base,
    moe_layer_cfg,
    moe_layer_ops,
    overlaps,
    pipelined_configs,
    pp2_dualpipe_configs,
    random_and_public_configs,
    random_config,
    random_valid_configs,
    shortcut_methods,
    state_proof,
)
from helpers_files import (
    COLLECTIVES_PUBLISHED,
    KERNELS_PUBLISHED,
    PUBLIC_SHARED_DIR,
    PUBLIC_TRAINING,
    SHARED_VALIDATION,
    check_extra_training_file,
    check_fp8_faster_than_bf16,
    check_generator_writes,
    check_script_check_mode,
    check_validates_with_no_failed_row,
    collectives_published_validated,
    kernels_published_validated,
    mirror_git,
    mirror_source,
    public_training_validated,
    published_kernel_rows,
    training_rows,
    validate_file_sharing_kernels,
    validated,
)

__all__ = [
    "BASE", "COLLECTIVES_PUBLISHED", "FAST", "FP8_SLICE", "KERNELS_PUBLISHED", "PUBLIC_SHARED_DIR",
    "PUBLIC_TRAINING", "SHARED_VALIDATION", "SLOW", "SMALL_RUN", "TINY_MODEL", "CommRecorder",
    "assert_same_simulation", "check_extra_training_file", "check_fp8_faster_than_bf16",
    "check_generator_writes", "check_script_check_mode", "check_validates_with_no_failed_row",
    "cli", "collectives_published_validated", "counted_graphs", "dgx_h100_run", "fp8_slice_cfg",
    "hf_config_read", "kernels_published_validated", "layer_ops", "load_script", "loadable_keys",
    "make_base", "mirror_git", "mirror_source", "moe_layer_cfg", "moe_layer_ops", "one_error_line",
    "overlaps", "pipelined_configs", "pp2_dualpipe_configs", "public_training_validated",
    "published_kernel_rows", "random_and_public_configs", "random_config", "random_valid_configs",
    "service_problem",
    "shortcut_methods", "state_proof", "training_rows", "validate_file_sharing_kernels",
    "validated",
]
