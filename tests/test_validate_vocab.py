"""Other spellings of kernel libraries and training settings, read as trainsim's own."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.errors import ConfigError
from trainsim.validate.kernels import predict_kernel_row
from trainsim.validate.training import predict_training_row
from trainsim.validate.vocab import attention_impl, grouped_impl_of, normalized_training_row

DATA = Path(__file__).resolve().parents[1] / "src" / "trainsim" / "data" / "validation"


def _attention_row(impl: str, gpu: str = "h100-sxm-80gb", kind: str = "attention_fwd") -> dict:
    return {"id": f"x-{impl}", "gpu": gpu, "kind": kind, "implementation": impl,
            "dtype": "bf16", "batch": "4", "seq_len": "4096", "heads": "32", "head_dim": "128",
            "causal": "1", "measured_value": "300", "measured_unit": "TFLOP/s", "note": ""}


def _grouped_row(impl: str) -> dict:
    return {"id": f"g-{impl}", "gpu": "h100-sxm-80gb", "kind": "gemm_grouped",
            "implementation": impl, "dtype": "bf16", "m": "65536", "n": "4096", "k": "2048",
            "groups": "8", "measured_value": "500", "measured_unit": "TFLOP/s", "note": ""}


H100, A100, B200, MI300X = "h100-sxm-80gb", "a100-sxm-80gb", "b200-sxm-180gb", "mi300x"


@pytest.mark.parametrize(("library", "gpu", "impl"), [
    ("flashinfer", H100, "flash3"), ("flashinfer", A100, "flash2"),
    ("flashinfer", B200, "flash2"), ("thunderkittens", H100, "flash3"), ("tk", A100, "flash2"),
    ("te", H100, "cudnn"), ("transformer_engine", A100, "flash2"),
    ("ck", MI300X, "ck"), ("te", MI300X, "ck"), ("flex", H100, "flex"), ("pytorch", A100, "eager"),
    ("FlashAttention-2", H100, "flash2"), ("xformers", A100, "mem_efficient"),
    ("vllm", H100, "flash3"),
])
def test_attention_library_is_read_as_the_kernel_it_runs_on_that_gpu(library, gpu, impl):
    """Each library is the kernel family it dispatches to on the GPU's generation."""
    assert attention_impl(library, gpu, False)[0] == impl


@pytest.mark.parametrize(("library", "gpu", "backward", "words"), [
    ("ck", H100, False, "no 'ck' attention kernel is known here for an sm90 GPU"),  # AMD's
    # FlashInfer's determine_attention_backend reads CUDA compute capability: no ROCm kernel
    ("flashinfer", MI300X, False, "for an AMD GPU"),
    ("te", "h1000", False, "unknown GPU 'h1000'"),  # not read as AMD: the catalog's error
    ("flashinfer", H100, True, "no attention backward"),  # inference only
    ("triton", A100, False, "differ in kind and speed"),  # which Triton kernel: a guess
    # FA1 or FA2: the FA2 paper's "FlashAttention" is FA1, flash_attn 1.x was FA1 too
    ("flash_attn", A100, False, "write fa1 or fa2"),
    ("FlashAttention", A100, False, "write fa1 or fa2"),
    ("flash", A100, False, "write fa1 or fa2"),
    ("torch", H100, False, "write sdpa or eager"),  # SDPA or plain ops, ~10x apart
    ("sglang", H100, False, "unknown attention implementation 'sglang'; known: ck, cudnn"),
])
def test_attention_library_without_a_known_kernel_is_a_one_line_error(library, gpu, backward,
                                                                      words):
    with pytest.raises(ConfigError, match=words) as exc:
        attention_impl(library, gpu, backward)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize(("written", "meant", "gpu"), [
    ("fa1", "flash1", A100), ("fa2", "flash2", A100), ("FlashAttention-2", "flash2", A100),
    ("pytorch", "eager", A100), ("xformers", "mem_efficient", A100),
    ("flashinfer", "flash3", H100), ("thunderkittens", "flash2", A100),
    ("Transformer-Engine", "cudnn", H100), ("ck", "flash2", MI300X),
])
def test_attention_synonym_predicts_exactly_as_the_kernel_it_names(written, meant, gpu):
    """A row naming a library is priced as the kernel it is read as, and not as another one
    (the first FlashAttention against the second, eager ops against SDPA's flash kernel)."""
    row = _attention_row(written, gpu=gpu)
    odd, base = predict_kernel_row(row), predict_kernel_row({**row, "implementation": meant})
    assert odd.error is None and odd.predicted == base.predicted
    other = {"flash1": "flash2", "flash2": "flash1", "eager": "sdpa"}.get(meant, "eager")
    assert predict_kernel_row({**row, "implementation": other}).predicted != base.predicted


def test_library_synonym_predicts_as_the_kernel_it_names():
    """'te' on an H100 is priced exactly as 'cudnn' (TE picks cuDNN on Hopper), and the row
    reports how the library was read."""
    te, cudnn = predict_kernel_row(_attention_row("te")), predict_kernel_row(_attention_row("cudnn"))
    assert te.error is None and te.predicted == cudnn.predicted
    assert "Transformer Engine" in te.chosen["implementation"]
    assert "implementation" not in cudnn.chosen
    a100 = predict_kernel_row(_attention_row("te", gpu="a100-sxm-80gb"))
    assert a100.chosen["attention"] == "flash2"


@pytest.mark.parametrize(("library", "impl"), [
    ("megablocks", "triton"), ("cublaslt", "loop"), ("sglang", "triton"),
    ("grouped_gemm", "loop"), ("Transformer-Engine", "multi_stream"), ("cutlass", "cutlass"),
])
def test_grouped_gemm_library_is_read_as_its_grouped_kernel(library, impl):
    assert grouped_impl_of(library) == impl


def test_grouped_library_that_runs_no_gemm_or_is_unknown_fails_its_row_in_one_line():
    deepep = predict_kernel_row(_grouped_row("deepep"))
    assert deepep.predicted is None and "no expert GEMM" in deepep.error
    unknown = predict_kernel_row(_grouped_row("nosuchlib"))
    assert unknown.predicted is None and "known: cublas" in unknown.error
    assert "\n" not in deepep.error + unknown.error


def _gemm_row(impl: str, gpu: str = MI300X) -> dict:
    return {"id": "g", "gpu": gpu, "kind": "gemm", "implementation": impl, "dtype": "bf16",
            "m": "8192", "n": "8192", "k": "8192", "measured_value": "600",
            "measured_unit": "TFLOP/s", "note": ""}


@pytest.mark.parametrize("library", ["tensorrt", "cublass", "hipblas-lt"])
def test_dense_gemm_of_an_unlisted_library_fails_its_row_instead_of_pricing_a_guess(library):
    """A typo or a library whose GEMM is not known here is not priced at the GPU's GEMM rate."""
    assert predict_kernel_row(_gemm_row("hipblaslt")).error is None
    res = predict_kernel_row(_gemm_row(library))
    assert res.predicted is None and "unknown dense GEMM implementation" in res.error
    assert "known: cublas" in res.error and "\n" not in res.error


def test_cublaslt_dense_gemm_predicts_as_cublas():
    lt, cublas = predict_kernel_row(_gemm_row("cuBLASLt", H100)), predict_kernel_row(
        _gemm_row("cublas", H100))
    assert lt.error is None and lt.predicted == cublas.predicted


def test_memory_bound_row_of_an_unlisted_library_fails_its_row():
    row = {"id": "h100m-mem-rmsnorm", "gpu": H100, "kind": "memory_bound",
           "implementation": "liger", "dtype": "bf16", "tokens": "4096", "hidden": "4096",
           "bytes": str(2 * 2 * 4096 * 4096), "measured_value": "0.05", "measured_unit": "ms",
           "note": ""}
    assert predict_kernel_row(row).error is None
    res = predict_kernel_row({**row, "implementation": "ligr"})
    assert res.predicted is None and "unknown memory_bound implementation 'ligr'" in res.error


@pytest.mark.parametrize(("written", "meant"), [
    ("megablocks", "triton"), ("grouped_gemm", "cublas"), ("cuBLASLt", "cublas"),
    ("Transformer-Engine", "te"), ("sglang", "vllm"),
])
def test_grouped_gemm_synonym_predicts_exactly_as_the_kernel_it_names(written, meant):
    """A grouped-GEMM package is priced as the kernel it runs, and reports the reading."""
    odd, base = predict_kernel_row(_grouped_row(written)), predict_kernel_row(_grouped_row(meant))
    assert odd.error is None and odd.predicted == base.predicted
    assert "grouped GEMM" in odd.chosen["implementation"]
    assert "implementation" not in base.chosen
    other = "cutlass" if grouped_impl_of(meant) != "cutlass" else "cublas"
    assert predict_kernel_row(_grouped_row(other)).predicted != base.predicted


@pytest.mark.parametrize(("column", "written", "read"), [
    ("attention", " FLASH2 ", "flash2"), ("attention", "fa3", "flash3"),
    ("attention", "pytorch", "eager"), ("attention", "flash-attention-2", "flash2"),
    ("attention", "triton", "triton"), ("cp_comm_type", "all-gather", "all_gather"),
    ("moe_dispatcher", "flex", "deepep"), ("moe_dispatcher", "HybridEP", "hybridep"),
    ("moe_dispatcher", "alltoall_seq", "alltoall"), ("moe_dispatcher", "all-to-all", "alltoall"),
    ("cp_comm_type", "ring", "p2p"), ("cp_comm_type", "Ulysses", "a2a"),
    ("cp_comm_type", "allgather", "all_gather"), ("recompute", "Full", "full"),
    ("recompute", "SELECTIVE", "selective"), ("dtype", "BF16", "bf16"),
    ("dtype", "bfloat16", "bf16"), ("fp8_recipe", "tensorwise", "current"),
    ("grad_reduce_dtype", "float32", "fp32"), ("grad_reduce_dtype", "float", "fp32"),
    ("dtype", "half", "fp16"), ("memory_kind", "Device", "device"),
    ("framework", "Megatron-LM", "megatron-lm"), ("framework", "megatron_core", "megatron-core"),
    ("framework", "MCore", "megatron-core"), ("gpu", "H100-SXM-80GB", "h100-sxm-80gb"),
    ("sequence_parallel", "True", "true"),
])
def test_training_cell_is_read_in_the_readmes_spelling(column, written, read):
    out, _ = normalized_training_row({"gpu": "h100-sxm-80gb", column: written})
    assert out[column] == read


def test_transformer_engine_attention_follows_the_gpu():
    assert normalized_training_row({"gpu": "h100-sxm-80gb", "attention": "te"})[0][
        "attention"] == "cudnn"
    out, read = normalized_training_row({"gpu": "a100-sxm-80gb", "attention": "Transformer_Engine"})
    assert out["attention"] == "flash2" and read == {"attention": "Transformer_Engine -> flash2"}
    # its ROCm build: Composable Kernel fused attention (ROCm/TransformerEngine@ac80527d)
    out, read = normalized_training_row({"gpu": "mi300x", "attention": "te"})
    assert out["attention"] == "ck" and read == {"attention": "te -> ck"}
    with pytest.raises(ConfigError, match="unknown GPU 'h1000'"):
        normalized_training_row({"gpu": "h1000", "attention": "te"})
    # a name as nvidia-smi prints it is the catalog GPU it names (catalog.gpu_names)
    assert normalized_training_row({"gpu": "NVIDIA H100 80GB HBM3", "attention": "te"})[0][
        "attention"] == "cudnn"


@pytest.mark.parametrize(("written", "words"), [
    ("flash_attn", "write fa1 or fa2"), ("flash_attention", "write fa1 or fa2"),
    ("torch", "write sdpa or eager"), ("flashinfer", "no attention backward"),
])
def test_training_attention_that_names_no_one_kernel_is_a_one_line_error(written, words):
    with pytest.raises(ConfigError, match=words) as exc:
        normalized_training_row({"gpu": "h100-sxm-80gb", "attention": written})
    assert str(exc.value).startswith(f"attention={written!r}") and "\n" not in str(exc.value)


def test_options_tokens_ignore_case_spaces_and_commas():
    out, _ = normalized_training_row({"options": " TP_Overlap , dp-overlap;; "})
    assert out["options"] == "tp_overlap;dp_overlap"


def test_hierarchical_cp_is_a_one_line_error_naming_the_accepted_values():
    with pytest.raises(ConfigError, match="give p2p, a2a or all_gather"):
        normalized_training_row({"cp_comm_type": "a2a+p2p"})


def test_training_row_spelled_otherwise_predicts_as_written_in_the_readme():
    """A public row with its vocabulary in other case and synonyms predicts exactly the same,
    and reports the synonyms it read; an unknown value fails the row in one line."""
    with open(DATA / "training_public.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == "megatron21-t1-1.7B")
    base = predict_training_row(row)
    odd = predict_training_row({**row, "framework": "Megatron_LM", "dtype": row["dtype"].upper(),
                                "recompute": f" {row['recompute'].title()}",
                                "gpu": row["gpu"].upper(), "attention": row["attention"].upper()})
    assert base.error is None and odd.error is None
    assert odd.predicted == base.predicted and odd.extra["source_key"] == "megatron-lm"
    assert "read_as" not in odd.extra  # only spelling, no synonym
    flash = predict_training_row({**row, "attention": "fa2", "dtype": "float16"})
    assert flash.extra["read_as"] == {"attention": "fa2 -> flash2", "dtype": "float16 -> fp16"}
    assert flash.predicted == predict_training_row({**row, "attention": "flash2"}).predicted
    assert flash.predicted != base.predicted  # flash2, not the row's unfused attention
    bad = predict_training_row({**row, "cp_comm_type": "bogus", "cp": "1"})
    assert bad.predicted is None and "\n" not in bad.error
    # a row that fails in reading its cells is filed under its framework as the README spells it
    odd_bad = predict_training_row({**row, "framework": "Megatron_LM", "attention": "torch"})
    assert odd_bad.predicted is None and odd_bad.extra["source_key"] == "megatron-lm"


@pytest.mark.parametrize(("column", "written"), [
    ("measured_unit", "tflops"), ("measured_unit", "TFLOP/S"), ("kind", "Attention-Fwd"),
    ("dtype", "bfloat16"), ("causal", "True"),
])
def test_kernel_row_columns_read_in_any_case_and_usual_names(column, written):
    """A kernel row's unit, kind, dtype and causal flag in other spellings predict exactly as
    the README's spelling ('TFLOP/s', 'attention_fwd', 'bf16', '1')."""
    base = predict_kernel_row(_attention_row("cudnn"))
    odd = predict_kernel_row({**_attention_row("cudnn"), column: written})
    assert odd.error is None and odd.predicted == base.predicted


def test_kernel_time_units_in_other_names_convert_like_the_readmes():
    ms = predict_kernel_row({**_attention_row("cudnn"), "measured_unit": "ms"})
    us = predict_kernel_row({**_attention_row("cudnn"), "measured_unit": "\u00b5s"})
    assert us.predicted == pytest.approx(1000 * ms.predicted)


def test_kernel_causal_flag_that_is_not_a_boolean_fails_instead_of_reading_as_false():
    res = predict_kernel_row({**_attention_row("cudnn"), "causal": "causal"})
    assert res.predicted is None and "must be 0 or 1" in res.error


@pytest.mark.parametrize("written", ["All_Reduce", "allreduce", "all-reduce", "AllReduce"])
def test_collective_named_as_nccl_or_nccl_tests_do_predicts_as_all_reduce(written):
    from trainsim.validate.collectives import predict_collective_row

    row = {"id": "c", "gpu": "a100-sxm-80gb", "num_gpus": "8", "gpus_per_node": "8",
           "nic_gbps_per_gpu": "200", "collective": "all_reduce", "message_bytes": "1e9",
           "algorithm": "ring", "measured_busbw_GBps": "230", "note": ""}
    base, odd = predict_collective_row(row), predict_collective_row({**row, "collective": written})
    assert odd.error is None and odd.predicted == base.predicted
    bad = predict_collective_row({**row, "collective": "allreduction"})
    assert bad.predicted is None and "known: all_reduce" in bad.error


def test_training_cell_flash_is_read_as_the_config_reads_it():
    """A training row's ``flash`` predicts as a config's ``flash`` (flash2), as the validator read
    it before the synonyms existed; only a kernel row, which times one library, must choose."""
    with open(DATA / "training_public.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["id"] == "megatron21-t1-1.7B")
    flash = predict_training_row({**row, "attention": "flash"})
    assert flash.error is None and flash.extra["read_as"] == {"attention": "flash -> flash2"}
    assert flash.predicted == predict_training_row({**row, "attention": "flash2"}).predicted
    with pytest.raises(ConfigError, match="write fa1 or fa2"):
        attention_impl("flash", "a100-sxm-80gb", backward=False)
