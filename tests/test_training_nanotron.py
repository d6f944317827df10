"""The Ultra-Scale Playbook's nanotron runs (benchmarks/training_nanotron.csv, issue 17): an unseen
source, Llama-shaped 1B to 80B models on 1 to 64 nodes of 8 H100 with nanotron (TP+SP, 1F1B, ZeRO-0
or ZeRO-1). The file's rows, its tok/s -> seconds conversion, nanotron's pipeline cost split, and
bounds on today's error that can fail (the generic checks: tests/test_training_files.py)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from helpers import training_rows, validated

ROOT = Path(__file__).resolve().parents[1]
NANOTRON = ROOT / "benchmarks" / "training_nanotron.csv"


def _sampler():
    spec = importlib.util.spec_from_file_location("nanotron_sample",
                                                  ROOT / "benchmarks" / "nanotron_sample.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_file_has_one_best_and_one_drawn_run_per_cell():
    rows = training_rows(NANOTRON)
    cells: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        assert r["framework"] == "nanotron" and r["gpu"] == "h100-sxm-80gb", r["id"]
        assert "e3bcfc5c0b177d5f259a65465ddf0f880c71577f" in r["source"], r["id"]
        # 1M tokens per global batch (playbook: "sequence length of 4,096 and a global batch
        # size of 1M tokens")
        assert int(r["global_batch_size"]) * int(r["seq_length"]) == 2**20, r["id"]
        assert r["sequence_parallel"] == ("1" if int(r["tp"]) > 1 else "0"), r["id"]
        assert (r["options"] == "dp_overlap") == (r["zero_stage"] == "0" and
                                                  int(r["num_gpus"]) > int(r["tp"]) * int(r["pp"]))
        cells.setdefault((r["hidden_size"], r["num_gpus"]), []).append(r["id"].split("-")[1])
    # 4 models x 7 node counts, less the 80B on 1 and 2 nodes (no run there has a throughput)
    assert len(cells) == 26 and all(sorted(v) == ["best", "draw"] for v in cells.values())


def test_iteration_time_is_the_global_batch_over_the_published_tokens_per_second():
    for r in training_rows(NANOTRON):
        tok_s = float(re.match(r"published (\d+) tok/s", r["note"]).group(1))
        t = int(r["global_batch_size"]) * int(r["seq_length"]) / tok_s
        assert abs(float(r["measured_iteration_s"]) - t) < 1e-4, r["id"]


def test_conversion_by_hand():
    """The 1B model's best single-node run: DP 8, MBS 2, GradAcc 16, 321,200 tok/s (40,150 per
    GPU, MFU 39.2 %): 256 x 4096 / 321200 = 3.2646 s. Its MFU is nanotron's get_flops (6N plus
    the 12 L h s attention term, N = 1.34e9 with the tied 131072 x 2048 embedding) at 989.5
    TFLOP/s: 40150 x (6 x 1.3422e9 + 12 x 16 x 2048 x 4096) / 989.5e12 = 0.392."""
    row = {r["id"]: r for r in training_rows(NANOTRON)}["nt-best-1b-n1-dp8-tp1-pp1-mbs2-acc16-z0"]
    assert abs(float(row["measured_iteration_s"]) - 256 * 4096 / 321200) < 1e-4
    n = 131072 * 2048 + 16 * (3 * 2048 * 8192 + 4 * 2048 * 2048)
    assert round(40150 * (6 * n + 12 * 16 * 2048 * 4096) / 989.5e12, 3) == 0.392


def test_pipeline_layout_is_nanotrons_cost_split():
    """models/base.py build_model @ e24d2483 by hand, 1B on pp 2: a layer costs
    4 x 2048^2 + 3 x 8192 x 2048 = 67.1e6, the lm_head 131072 x 2048 = 4 layers; the total, 20
    layers' worth, splits at 10: layer 11 crosses it, so 11 layers on the first stage, 5 and the
    lm_head on the second."""
    layout = _sampler().layout(16, 2048, 32, 8192, 2)
    assert layout == "E" + "t" * 11 + "|" + "t" * 5 + "L"
    assert _sampler().layout(16, 2048, 32, 8192, 1) is None
    for r in training_rows(NANOTRON):
        if int(r["pp"]) > 1:
            stages = r["pipeline_layout"].split("|")
            assert len(stages) == int(r["pp"]) and \
                sum(s.count("t") for s in stages) == int(r["num_layers"]), r["id"]


def test_nanotron_error_stays_under_todays_bound():
    """2026-11-25 (first run): MAPE 46.3 % over the 52 rows, every prediction fast; the 26
    best-per-cell runs 27.1 % (-10.7 ... -75.0 %), the 26 drawn runs 65.5 % (-99 %: runs at 1 to
    5 % MFU). After the Llama architecture, the eager GLU and the qkv layout copies (nanotron2):
    all 42.2 %, best 21.2 % (1 node -4 to -12 %), drawn 63.3 %. Bounds: those figures plus a
    margin."""
    _, res = validated(NANOTRON)
    apes = {r.id: r.ape for r in res}
    best = [a for i, a in apes.items() if i.startswith("nt-best-")]
    drawn = [a for i, a in apes.items() if i.startswith("nt-draw-")]
    assert len(best) == 26 and len(drawn) == 26
    assert sum(best) / len(best) < 0.23
    assert sum(drawn) / len(drawn) < 0.66  # all rows < 0.45: tests/test_training_files.py


def _nanotron_layer(row_id: str):
    """The forward and backward op lists of one decoder layer of a nanotron row's config."""
    from trainsim.validate.training import row_config
    from trainsim.workload.layers import backward_of, layer_forward
    from trainsim.workload.shard import shard_of

    row = {r["id"]: r for r in training_rows(NANOTRON)}[row_id]
    cfg = row_config(row, compute_db=None)
    sh = shard_of(cfg)
    fwd = layer_forward(cfg, sh)
    return cfg, {op.name: op for op in fwd}, {op.name: op for op in backward_of(fwd, sh)}


def test_rows_name_nanotrons_llama_architecture():
    """nanotron's LlamaConfig as the benchmark config sets it (hidden_act silu, RMSNorm, RoPE
    with rope_scaling null, no linear biases): the Llama 2 preset, every shape column
    overriding it, kv heads = heads (NUM_KEY_VALUE_HEADS = None). Without a preset the row was
    a GPT (LayerNorm, learned positions, biases): no RoPE kernel priced."""
    for r in training_rows(NANOTRON):
        assert r["model"] == "llama2-7b" and r["num_kv_heads"] == r["num_attention_heads"], r["id"]
    cfg, fwd, _ = _nanotron_layer("nt-best-80b-n8-dp1-tp4-pp16-mbs1-acc256-z0")
    m = cfg.model
    assert (m.normalization, m.position_embedding, m.add_bias_linear, m.rope_scaling) == \
        ("rmsnorm", "rope", False, None)
    assert (m.hidden_size, m.num_attention_heads, m.kv_heads, m.ffn_hidden_size) == \
        (8192, 64, 64, 28672)
    assert "rope" in fwd


def test_glu_activation_is_eager_on_the_fused_gate_up_halves():
    """GLUActivation (models/llama.py L194-L201 @ e24d2483): split of the one gate_up output,
    silu, product: two kernels on strided halves. 1B, MBS 2, tp 1: T = 8192 tokens, f = 8192:
    silu reads and writes T f, the product reads 2 T f and writes T f, 5 x 8192 x 8192 x 2 bytes
    = 671,088,640 (the fused kernel's 3 T f x 2 = 402,653,184); backward silu_backward, two
    products and the cat of the halves' gradients: 4 kernels."""
    _, fwd, bwd = _nanotron_layer("nt-best-1b-n1-dp8-tp1-pp1-mbs2-acc16-z0")
    glu = fwd["swiglu"]
    assert (glu.impl, glu.kernels, glu.bytes) == ("eager_chunked", 2, 5 * 8192 * 8192 * 2)
    assert bwd["swiglu.bwd"].kernels == 4


def test_qkv_layout_copies_by_hand():
    """CausalSelfAttention.forward (models/llama.py @ e24d2483) on the 1B (h 2048, MHA), MBS 2,
    tp 1, T = 8192: forward, qkv permute-contiguous (read, write 3h), cat of K and V (2h) and
    its permute-contiguous (2h): 14 h elements a token, 8192 x 14 x 2048 x 2 = 469,762,048
    bytes in 3 kernels; backward, the split's cat (2h), unbind's stack (3h) and view's reshape
    (3h): 16 h, 536,870,912 bytes. The output's transpose(0, 1) before o_proj is a copy at
    MBS 2 (8192 x 2048 x 2 x 2 = 67,108,864 bytes each way); at MBS 1 the view is contiguous.
    On tp 4 every width is a quarter."""
    _, fwd, bwd = _nanotron_layer("nt-best-1b-n1-dp8-tp1-pp1-mbs2-acc16-z0")
    qkv = fwd["qkv_relayout"]
    assert (qkv.kernels, qkv.bytes) == (3, 8192 * 14 * 2048 * 2)
    assert (bwd["qkv_relayout.bwd"].kernels, bwd["qkv_relayout.bwd"].bytes) == \
        (3, 8192 * 16 * 2048 * 2)
    assert fwd["attn_out_relayout"].bytes == bwd["attn_out_relayout.bwd"].bytes == 8192 * 2048 * 4
    names = list(fwd)
    assert names.index("qkv_proj") < names.index("qkv_relayout") < names.index("rope") \
        < names.index("attn_core") < names.index("attn_out_relayout") < names.index("out_proj")
    _, fwd1, _ = _nanotron_layer("nt-best-1b-n8-dp64-tp1-pp1-mbs1-acc4-z1")
    assert "attn_out_relayout" not in fwd1 and fwd1["qkv_relayout"].bytes == 4096 * 14 * 2048 * 2
    _, fwd4, _ = _nanotron_layer("nt-best-3b-n16-dp32-tp4-pp1-mbs8-acc1-z0")
    assert fwd4["qkv_relayout"].bytes == 8 * 4096 * 14 * (3072 // 4) * 2


def test_gqa_qkv_layout_backward_is_one_cat_of_the_qkv_gradient():
    """Review finding: nanotron's GQA branch (``is_gqa``, models/llama.py @ e24d2483) splits
    the qkv output and copies Q, K and V with ``transpose(0, 1).contiguous()`` (three kernels,
    then the K/V cat and its permute: five); backward, the K/V split's cat and the qkv split's
    cat of dQ, dK, dV, the transposes' and views' backwards being views. By hand, 32 query heads
    and 8 key/value heads of 64 (q 2048, kv 512 a rank), T = 8192: forward 2 x (3072 + 1024 +
    1024) elements a token, backward 2 x 1024 + 2 x 3072 (the MHA path's 2 x 1024 + 4 x 3072)."""
    from trainsim.workload.layers import qkv_relayout_op

    gqa = qkv_relayout_op(8192, 2048, 512)
    assert (gqa.kernels, gqa.bytes) == (5, 8192 * 2 * (3072 + 1024 + 1024) * 2)
    assert (gqa.bwd_kernels, gqa.bwd_bytes) == (2, 8192 * (2 * 1024 + 2 * 3072) * 2)
    mha = qkv_relayout_op(8192, 2048, 2048)
    assert (mha.kernels, mha.bwd_kernels) == (3, 3)
    assert mha.bwd_bytes == 8192 * (2 * 4096 + 4 * 6144) * 2


def test_other_frameworks_keep_fused_glu_and_no_layout_copies():
    """The two features are nanotron's: a Megatron-core run of the same shape prices one fused
    SwiGLU and no layout copy."""
    from trainsim.validate.training import row_config
    from trainsim.workload.layers import layer_forward
    from trainsim.workload.shard import shard_of

    row = {r["id"]: r for r in training_rows(NANOTRON)}["nt-best-1b-n1-dp8-tp1-pp1-mbs2-acc16-z0"]
    cfg = row_config({**row, "framework": "megatron-core", "framework_version": ""},
                     compute_db=None)
    names = {op.name: op for op in layer_forward(cfg, shard_of(cfg))}
    assert names["swiglu"].impl == "fused" and "qkv_relayout" not in names
    assert "attn_out_relayout" not in names


def test_rows_run_without_nvls_as_aws_ofi_nccl_sets_under_nccl_2_18():
    """The playbook's runs used the conda env 2-1-cu121 (torch 2.1, NCCL 2.18.1; huggingface/
    nanotron@67c5ebb6 run_multinode.sh), and aws-ofi-nccl sets NCCL_NVLS_ENABLE=0 on AWS under
    NCCL 2.18.5 (src/platform-aws.c, v1.7.2-aws on): every row says nvls 0, its cluster has NVLS
    off, and the 8B DP 128 all-reduce of 64 nodes runs without NVLS+tree, which the same row
    with the column empty picks."""
    from trainsim.network import network_for
    from trainsim.validate.training import row_config

    rows = training_rows(NANOTRON)
    assert all(r["nvls"] == "0" for r in rows)
    row = {r["id"]: r for r in rows}["nt-best-8b-n64-dp128-tp4-pp1-mbs2-acc1-z0"]
    algos = []
    for cells in (row, {**row, "nvls": ""}):
        cfg = row_config(cells, compute_db=None)
        net = network_for(cfg.cluster)
        algos.append(net.collective("all_reduce", 64e6, net.span(128, 4)).algorithm)
        assert cfg.cluster.nvls is (cells["nvls"] != "0")
    assert "nvls" not in algos[0] and algos[1] == "nvls_tree"
