"""What every check file beside the public training file owes, one table for all of them
(review55: the checks each tests/test_training_*.py module repeated): the public header and at
least (or exactly) its rows, the generator script printing the committed file, the script's
``--check`` against the repository mirrors it cites, every row predicted, and today's bound on
the error where one was set. What one source's rows mean (its tables, its settings, a subset's
bound) stays in that source's module; a row here says where a bound's history is written."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest
from helpers import (
    check_extra_training_file,
    check_generator_writes,
    check_script_check_mode,
    check_validates_with_no_failed_row,
    mirror_git,
    validated,
)

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
DGXC = "NVIDIA+dgxc-benchmarking"


@dataclasses.dataclass(frozen=True)
class CheckFile:
    """benchmarks/training_<name>.csv and what it is checked for."""

    name: str
    rows: int
    """Its rows: at least this many, exactly this many with ``exact``."""
    exact: bool = True
    script: str | None = None
    """The benchmarks/ script that prints the file (None: typed by hand)."""
    mirrors: tuple[str, ...] = ()
    """The mirrors (``owner+name``) the script's ``--check`` reads, its own repository first."""
    mape: float | None = None
    """The file's mean absolute error of the time stays under this."""
    band: tuple[float, float] | None = None
    """Each row's predicted / measured - 1 within these (inclusive)."""
    slow: bool = False
    """Its ``--check``, validation and bound run with ``-m slow`` only."""

    @property
    def path(self) -> Path:
        return BENCH / f"training_{self.name}.csv"


FILES = [
    # data49 (main ea53e530): 51 rows MAPE 9.77 %, -35.8 / +22.8 %; nvfp452: the 6 Llama NVFP4
    # rows, 57 rows 8.0 %; nvfp453: 8.1 %. Bounds: 9.8 + 1.2 points, the extremes plus ~6.
    CheckFile("bridge_archive", 57, script="bridge_archive_rows.py",
              mirrors=("NVIDIA-NeMo+Megatron-Bridge",), mape=0.11, band=(-0.42, 0.30)),
    CheckFile("deepspeed", 20, exact=False),
    CheckFile("dgxc", 44),  # the bounds by release: test_training_dgxc.py
    # newsrc7 (main e187151): MAPE 2.8 %, max 10.7 % (GPT-3 175B fp8 at 2,048 GPUs), signed -2.1 %
    CheckFile("dgxc2502", 20, script="dgxc2502_rows.py", mape=0.04, band=(-0.13, 0.13)),
    # newsrc7 (main 90207d3): MAPE 20.1 %, max 65.8 % (DeepSeek-V3 on GB200); the H100 dense and
    # GB200 dense bounds: test_training_dgxc2505.py
    CheckFile("dgxc2505", 27, script="dgxc2505_rows.py", mape=0.23, band=(-0.72, 0.72)),
    # data54 (main 78e02712): MAPE 15.2 %, every row fast, -7.9 / -23.3 %; grok57, the etp cell:
    # 6.2 %, -0.6 / -15.4 %; fp8 faster than bf16 relative to measured: test_training_dgxc_grok1.py
    CheckFile("dgxc_grok1", 36, script="dgxc_grok1_rows.py",
              mirrors=(DGXC, "NVIDIA+Megatron-LM", "NVIDIA+NeMo"), mape=0.08, band=(-0.20, 0.05)),
    # dgxc54: MAPE 5.6 %, max 13.9 % (H100 bf16); fp8 below bf16: test_training_dgxc_grok1_2505.py
    CheckFile("dgxc_grok1_2505", 8, script="dgxc_grok1_2505_rows.py", mirrors=(DGXC,),
              mape=0.10, band=(-0.15, 0.20)),
    # dgxc54: bf16 -1.7 %, fp8 -4.7 %; the fp8 / bf16 ratio: test_training_dgxc_llama31_2505.py
    CheckFile("dgxc_llama31_2505", 2, script="dgxc_llama31_2505_rows.py",
              mirrors=(DGXC, "NVIDIA+NeMo"), band=(-0.10, 0.10)),
    # dgxc54: MAPE 18.1 %, -28 / -3 %; GB200 fast, fp8 below bf16: test_training_dgxc_llama4.py
    CheckFile("dgxc_llama4", 8, script="dgxc_llama4_rows.py", mirrors=(DGXC,), mape=0.22,
              band=(-0.32, 0.10)),
    # data54 (main 78e02712): MAPE 19.5 %, -2.4 / +41.5 %; the fallback at ad30c278 10.7 %; the
    # maxtext profile (jax55): 6.7 %, -7.1 / +14.2 %; bf16 slow: test_training_dgxc_maxtext.py
    CheckFile("dgxc_maxtext", 22, script="dgxc_maxtext_rows.py", mirrors=(DGXC,), mape=0.08,
              band=(-0.10, 0.16)),
    # data54 (main 78e02712): MAPE 18.7 %, every row fast, -14.9 / -25.1 % (the fallback prices
    # the 5B bf16 step at 49-50 % MFU where Pax ran 42 %); ad30c278 23.3 %; the paxml profile
    # (jax55: jax.checkpoint re-runs no fc2, which the fallback's Megatron MLP checkpoint did on
    # the 175B rows): 26.5 %, every row fast, -19.4 / -36.0 %, the missing time unexplained
    CheckFile("dgxc_paxml", 13, script="dgxc_paxml_rows.py", mirrors=(DGXC, "google+paxml"),
              mape=0.30, band=(-0.40, 0.05)),
    # ds30 (main c85c2a1): 42 rows MAPE 27.1 %, every row fast, -55.3 % (530B, 512 GPUs, micro-batch
    # 1) to -2.2 % (175B, sequence 1024, 256 GPUs, micro-batch 16). Its --check measures images.
    CheckFile("dsazure", 42, script="dsazure_rows.py", mirrors=("microsoft+DeepSpeed",),
              mape=0.30, band=(-0.62, 0.05), slow=True),
    # data52 (main dbb4f753): MAPE 10.6 %, -26.2 / +6.5 %; flagperf53: 9.9 %; the llama3 rows'
    # bounds: test_training_flagperf.py. Its --check: the tables and flags from the FlagPerf
    # mirror, and the llama3 scripts pass none of the flags left to Megatron-LM core_v0.6.0's
    # defaults, which its arguments.py states (both mirrors).
    # source59 (main 3c22c68a): MAPE 14.4 %, -46.2 % (Lambda's Hugging Face baseline on H100) /
    # +22.5 % (README 355M), signed -1.0 %; without the two baseline rows 10.8 %; its own bounds
    # (FA2 / FA1 at 8k, 1 -> 8 GPUs, H100 fast, the baseline rows): test_training_flashattn.py;
    # hfgpt59 (DDP's fp32 gradient accumulation under autocast): 13.6 %, max 38.7 % (H100);
    # gelu60 (the baseline rows' gelu_new as its eager kernels): 11.6 %, max 22.5 % (355M);
    # checks62 (a flash-attention profile: DDP / ZeroRedundancyOptimizer under autocast, fused
    # dense with the GELU in cuBLASLt epilogues, apex's cross-entropy): 10.6 %, -19.2 / +20.6 %
    CheckFile("flashattn", 17, script="flashattn_rows.py",
              mirrors=("Dao-AILab+flash-attention", "LambdaLabsML+flash-attention",
                       "LambdaLabsML+examples"), mape=0.115, band=(-0.25, 0.25)),
    # source61 (first prediction, nothing fitted): 13 rows (9 NeMo, 4 MaxText) MAPE 8.2 %,
    # -18.2 % (A4 B200 405B fp8, NeMo) / +5.3 % (A3 Ultra Mixtral bf16), signed -6.5 %; with
    # fp8amax61's tp_only_amax_red stated (3 rows): 8.3 %, -18.7 % (A4 70B); by VM:
    # test_source61_gpurecipes.py. a4nemo62 (NeMo rows state fp8_param_gather from fp8_params,
    # A3 Ultra 70B +0.63 -> +0.51 %; the 405B rows defer_embedding_wgrad_compute 1, limit 50):
    # 8.26 % (over jax62: 8.02 %), max -18.7 %: test_a4nemo62.py
    CheckFile("gpurecipes", 13, script="source61_gpurecipes_rows.py",
              mirrors=("AI-Hypercomputer+gpu-recipes",), mape=0.10, band=(-0.25, 0.12)),
    # source61 (first prediction through the no-profile path: llm.c has none): 6 rows MAPE 26.7 %,
    # every row slow, +2.4 % (GPT-2 1558M on H100) .. +52.5 % (GPT-3 125M at 2,048 on A100), the
    # error falling with width: test_source61_llmc.py. llmc61 (the llm-c profile: fused
    # classifier, fused LayerNorm, no dropout, bias-gradient kernels, ZeRO-1): 14.4 %, -0.3 %
    # (1558M H100) .. +24.3 % (GPT-3 125M at 2,048), 124M +15.6 %: test_llmc61.py. llmc62 (cuDNN
    # below Hopper priced as the flash2 family): 10.9 %, 124M +11.0 %, GPT-3 125M +19.8 %:
    # test_llmc62.py
    CheckFile("llmc", 6, script="source61_llmc_rows.py", mirrors=("karpathy+llm.c",),
              mape=0.12, band=(-0.06, 0.23)),
    # source62 (first prediction through the no-profile path: Fast-LLM has no profile): 8 rows
    # MAPE 24.8 %, signed +6.2 %, A100 / H100 rows slow (+17.2 .. +29.7 %), the two V100 fp16 rows
    # fast (-23.8 %, -50.6 % SmolLM2-135M): test_source62_fastllm.py; the fast-llm profile
    # (Triton norm / gated activation / loss, fp32 reductions, ZeRO-1 / 2 shards): 8.7 %,
    # -24.7 % (V100 SmolLM2) .. +8.2 % (A100 SmolLM2)
    # mech63 (Fast-LLM's fp32 where-masked score chain, fp32_where_scores): 5.7 %, -13.5 % (the
    # 8B micro-1 ZeRO-2 row) .. +8.2 %, the V100 rows -24.7 / -8.0 -> -8.6 / +2.4 %
    CheckFile("fastllm", 8, script="source62_fastllm_rows.py", mirrors=("ServiceNow+Fast-LLM",),
              mape=0.07, band=(-0.16, 0.10)),
    # source62b (first prediction through the no-profile path: Colossal-AI has none): 2 rows MAPE
    # 22.7 %; the 7B row's micro-batch stated (benchmark.py's loop): 23.3 %, 7B H200 +18.0 %
    # (read as torchtitan), 70B B200 -28.5 % (read as megatron-core): test_source62b.py;
    # colossalai62's profile: 13.1 %, 7B +18.0 %, 70B -8.3 % (memory 1.0 %): test_colossalai62.py;
    # mech63 (shardformer's FusedRMSNorm beside the eager modules): 11.9 %, +9.6 %, -14.3 %
    CheckFile("colossalai", 2, script="source62b_colossalai_rows.py",
              mirrors=("hpcaitech+ColossalAI",), mape=0.13, band=(-0.18, 0.14)),
    # source63 (first prediction through the no-profile path, read as torchtitan: accelerate has
    # no profile): 2 rows MAPE 6.6 %, bf16 -5.6 %, fp8 -7.5 %; the published figures are rounded
    # ("~8000", "~10000"): test_source63_accelerate.py
    CheckFile("accelerate", 2, script="source63_accelerate_rows.py",
              mirrors=("huggingface+accelerate",), mape=0.09, band=(-0.12, 0.06)),
    # source63b (first prediction through the no-profile path: lit-gpt has none; its 2023 date is
    # before torchtitan's first entry and DeepSpeed runs no flash2, so the plain PyTorch loop's
    # FSDP): 1 row, +1.2 % ("24k" rounded): test_source63_accelerate.py
    CheckFile("tinyllama", 1, script="source63b_tinyllama_rows.py",
              mirrors=("jzhang38+TinyLlama",), mape=0.06, band=(-0.06, 0.06)),
    # source63c (AWS's torchtitan test case, the torchtitan profile): 2 rows MAPE 3.8 %, default
    # +5.9 %, compile +1.7 %; reserved memory 68.57 / 63.48 GiB predicted 39.4 / 37.4 (-42 %,
    # RESULTS.md Leads): test_source63_accelerate.py
    CheckFile("awsome_torchtitan", 2, script="source63c_awsome_torchtitan_rows.py",
              mirrors=("aws-samples+awsome-distributed-training", "pytorch+torchtitan"),
              mape=0.06, band=(-0.03, 0.10)),
    CheckFile("flagperf", 24, script="flagperf_rows.py",
              mirrors=("FlagOpen+FlagPerf", "NVIDIA+Megatron-LM"), mape=0.14, band=(-0.32, 0.15)),
    # data52: MAPE 7.9 %; internevo53: 6.9 %; internevo54: 5.3 %, -22.8 / +2.9 %; the zero1=8 tp1
    # and checkpointed rows: test_training_internevo.py
    # source60 (main 54d09154): first prediction 16.0 %, -40.2 % (23.10 5B fp8 H100) / +0.2 %;
    # where the misses sit (A100 TE rows close, H100 and plain-XLA rows fast): test_training_jaxtoolbox.py;
    # jaxremat60: the rows state their remat policies, 15.4 %, -38.5 % / +0.2 % (bound unmoved)
    CheckFile("jaxtoolbox", 22, script="jaxtoolbox_rows.py",
              mirrors=("NVIDIA+JAX-Toolbox", "google+paxml", "NVIDIA+TransformerEngine",
                       "AI-Hypercomputer+maxtext", "google+praxis"),
              mape=0.18, band=(-0.45, 0.10)),
    CheckFile("internevo", 48, script="internevo_rows.py", mirrors=("InternLM+InternEvo",),
              mape=0.065, band=(-0.27, 0.08)),
    # newsrc8 (main 529b8d1): MAPE 21.3 %, -47.8 ... -4.8 %; rowopts38 (the interleaved pipeline's
    # send overlap stated): 26.5 %, -51.4 ... -11.8 %; the last step: test_training_mcore_dsv3_gb200.py
    CheckFile("mcore_dsv3_gb200", 13, script="dsv3_gb200_ladder_rows.py",
              mirrors=("NVIDIA+Megatron-LM",), mape=0.29, band=(-0.55, 0.05)),
    # 52nd session coordinator (the no-profile fallback): MAPE 17.5 %, -5.9 .. -27.1 %;
    # mllama57 (profile megatron-llama: every micro-batch's reduce-scatters): 13.3 %, -19.9 ..
    # -0.3 %; mllama58 (the DistributedOptimizer rows' unfused main_grad adds, the script's
    # --no-gradient-accumulation-fusion): 12.9 %, -19.9 .. -0.4 %; the optimizers' order:
    # test_training_megatron_llama.py
    CheckFile("megatron_llama", 8, script="megatron_llama_rows.py",
              mirrors=("alibaba+Megatron-LLaMA",), mape=0.14, band=(-0.24, 0.05)),
    CheckFile("mlm_llama", 3),  # no bound: the error is RESULTS.md's
    CheckFile("mlperf5", 20, exact=False),
    # amd (22nd session): MAPE 2.1 %, max 5.7 % (AMD MI355X); one prediction per GPU
    CheckFile("mlperf51_amd", 6, mape=0.04, band=(-0.05, 0.085)),
    # nvfp452: GB300 -3.4 %, GB200 +9.8 / +6.7 / +6.1 %; nvfp453 (NVFP4 GEMMs at 1.975x the 8-bit
    # rate): GB200 -10.9 / -12.7 / -12.7 %, MAPE 9.9 %
    # source60 (main 54d09154): first prediction 18.1 %, -7.2 % on one A3 VM, -18..-26 % on 2-16;
    # tcpx60 (fabric tcpx, gpus_per_nic 2): 16.5 %, -7.2 %, -17.0..-22.2 %; jax61: 13.1 %;
    # jax62 (XLA's combined replica all-reduces, unscanned layers): 5.4 %, -14.0 .. +6.6 %
    CheckFile("maxtext_a3", 5, script="maxtext_a3_rows.py", mirrors=("AI-Hypercomputer+maxtext",),
              mape=0.08, band=(-0.18, 0.10)),
    CheckFile("mlperf51_nvfp4", 4, script="mlperf51_nvfp4_rows.py",
              mirrors=("mlcommons+training_results_v5.1",), mape=0.12, band=(-0.16, 0.16)),
    # newsrc7 (main 5bf9e2c): MAPE 7.0 %, every row fast; mlp33 (the data-parallel rings at
    # MLPerf's 8-channel cap, collectives.nccl.NET_CHANNEL_Bps): 3.0 %, -5.6 ... +1.2 %
    CheckFile("mlperf51_partners", 6, script="mlperf51_partner_rows.py", mape=0.04,
              band=(-0.08, 0.03)),
    CheckFile("mlperf_partners", 9, exact=False),
    # newsrc8 (main db8f7e0): MAPE 17.2 %, max 61.9 % (Megatron-FSDP); moe33 (that row at its
    # command's TP 1, test_training_moe_modelzoo.test_fsdp_row_runs_the_commands_tp): 11.8 %,
    # max 45.0 % (GB200 128k mxfp8)
    CheckFile("moe_modelzoo", 13, script="moe_modelzoo_rows.py",
              mirrors=("yanring+Megatron-MoE-ModelZoo",), mape=0.13, band=(-0.27, 0.50)),
    # the best and drawn runs' bounds and their history: test_training_nanotron.py
    CheckFile("nanotron", 52, mape=0.45),
    # newsrc7 (main 5bf9e2c): MAPE 3.9 %, max 11.0 % (Llama 2 70B at 24.01), signed -2.0 %: every
    # release maps to the nemo profile's 24.07 entry. h200inv62 (62nd session): the H100 prices
    # FA2 from the H200's SDPA flash records (compute.chain.twin_database): MAPE 4.2 -> 3.9 %,
    # launcher2403-llama2-13b-16 +11.8 -> +19.0 % (RESULTS.md, its Leads 1)
    CheckFile("nemo_launcher", 18, script="launcher_table_rows.py", mape=0.05,
              band=(-0.13, 0.20)),
    CheckFile("nemo_longseq", 17, mape=0.12),  # by GPU: test_training_nemo_longseq.py
    CheckFile("nemo_perf", 20, mape=0.11, band=(-0.22, 0.22)),  # by GPU: test_training_nemo_perf.py
    CheckFile("nemotron4", 3),  # its bound: test_training_dgxc.py
    CheckFile("olmo_core", 10, mape=0.075, band=(-0.23, 0.23)),  # by model: test_training_olmo_core.py
    CheckFile("pytorch", 19, exact=False),
    # data53: MAPE 21.4 %, every row fast, -7.6 .. -35.8 % (compute: the node's own GEMM sweep runs
    # large bf16 GEMMs at ~1,090 TFLOPS where trainsim prices ~1,360); memory:
    # test_training_simumax_b200.py
    CheckFile("simumax_b200", 44, script="simumax_b200_rows.py",
              mirrors=("MooreThreads+SimuMax",), mape=0.28, band=(-0.40, 0.10)),
    CheckFile("torchao", 8),  # no bound: the file checks the tool, it does not tune it
    # data49 (main ea53e530): BF16 +5.6 %, MXFP8 -2.0 %; the NVFP4 row (nvfp452, nvfp453) -4.9 %;
    # memory: test_training_torchtitan_gb200.py
    CheckFile("torchtitan_gb200", 3, script="torchtitan_nvfp4_rows.py",
              mirrors=("pytorch+torchtitan",), band=(-0.08, 0.12)),
    # zeropp29 (main c932233): MAPE 23.6 %, 1 link +6.4 / +0.1 %, 2 links -23.4 %, 4 links
    # -44.3 / -37.0 %, 8 links -30.8 %
    CheckFile("zeropp", 6, script="zeropp_rows.py", mirrors=("microsoft+DeepSpeed",),
              mape=0.27, band=(-0.50, 0.12)),
]


def _params(keep=lambda f: True, slow_marked: bool = False) -> list:
    """The table's files that ``keep`` selects, each a pytest param named after the file
    (``-m slow`` on the slow files where ``slow_marked``)."""
    return [pytest.param(f, id=f.name,
                         marks=[pytest.mark.slow] if slow_marked and f.slow else [])
            for f in FILES if keep(f)]


def test_table_names_each_file_once_and_every_file_a_module_checks():
    """Every benchmarks/training_*.csv a tests/test_training_*.py module names (the errata and
    the public file apart) has its row here, once: a new check file gets its generic checks by a row."""
    names = [f.name for f in FILES]
    assert len(names) == len(set(names))
    named = set()
    for module in (ROOT / "tests").glob("test_training_*.py"):
        named |= set(re.findall(r'"training_(\w+)\.csv"', module.read_text()))
    missing = named - set(names) - {"errata", "public"}
    assert not missing, f"add a CheckFile row for {sorted(missing)} in {Path(__file__).name}"
    assert all(f.path.exists() for f in FILES)


@pytest.mark.parametrize("f", _params())
def test_file_has_the_public_header_and_its_rows(f):
    rows = check_extra_training_file(f.path, min_rows=f.rows)
    assert len(rows) == f.rows if f.exact else len(rows) >= f.rows


@pytest.mark.parametrize("f", _params(lambda f: f.script))
def test_generator_writes_the_file(f):
    check_generator_writes(BENCH / f.script, f.path)


@pytest.mark.parametrize("f", _params(lambda f: f.mirrors, slow_marked=True))
def test_script_check_reads_the_mirrors(f):
    """The script's ``--check`` re-reads its typed-in figures from the mirrors it cites
    (skipped where one is missing)."""
    script = BENCH / f.script
    assert all(f'"{repo}"' in script.read_text() for repo in f.mirrors), f.mirrors
    for repo in f.mirrors[1:]:
        if not (mirror_git(repo) / "HEAD").exists():
            pytest.skip(f"no {repo.replace('+', '/')} mirror")
    check_script_check_mode(script, mirror_git(f.mirrors[0]), f.mirrors[0].replace("+", "/"))


@pytest.mark.parametrize("f", _params(slow_marked=True))
def test_file_validates_with_no_failed_row(f):
    check_validates_with_no_failed_row(f.path)


@pytest.mark.parametrize("f", _params(lambda f: f.mape is not None or f.band, slow_marked=True))
def test_error_stays_under_todays_bound(f):
    """Each bound is the first prediction nothing was fitted to (or the last change that moved
    it, as the row's comment says) plus a margin; RESULTS.md holds each figure's block."""
    _, res = validated(f.path)
    errs = {r.id: r.predicted / r.measured - 1 for r in res}
    assert len(errs) == len(res) > 0
    if f.band:
        lo, hi = f.band
        assert all(lo <= e <= hi for e in errs.values()), \
            {k: e for k, e in errs.items() if not lo <= e <= hi}
    if f.mape is not None:
        mape = sum(abs(e) for e in errs.values()) / len(errs)
        assert math.isfinite(mape) and mape < f.mape, mape
