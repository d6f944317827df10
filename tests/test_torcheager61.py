"""torcheager61 (2026-11-29): plain PyTorch / Hugging Face runs. The final norm's tensors among the
gradient tensors (``workload.sharding._grad_tensors``); a gated MLP's Hugging Face gate and
``relu2`` as their eager kernels and saved tensors (``workload.hf_activations``); the search's
ZeRO-1 bound prices ``ZeroRedundancyOptimizer``'s per-tensor broadcasts as the simulator does
(``search.layout_costs``). RESULTS.md "61st session, torcheager61"."""

from __future__ import annotations

import dataclasses
import json
import random
import warnings
from pathlib import Path

import pytest
from helpers import loadable_keys
from helpers_cli import load_script
from helpers_files import training_rows

from trainsim.catalog import model_from_hf_config
from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.pricing import Pricer
from trainsim.search.cli_inputs import build_base
from trainsim.search.evaluation import Bounds, evaluate
from trainsim.search.layout_costs import param_broadcasts_s
from trainsim.search.space import SearchSpace
from trainsim.simulator import build_tasks
from trainsim.validate.training import row_config
from trainsim.workload.elementwise import activation_op, backward_bytes
from trainsim.workload.fp8_gather import param_gather_width
from trainsim.workload.grad_accumulation import fp32_grad_accumulation
from trainsim.workload.hf_activations import (
    HF_ACT_NAMES,
    eager_chain,
    gated_chain,
    gated_saved_beyond_fused,
    saved_bytes_per_element,
)
from trainsim.workload.sharding import _grad_tensors
from trainsim.workload.zero1_broadcast import stage_tensors

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "benchmarks" / "training_flashattn.csv"
A100 = "flashattn-lambda-hf-gpt3-2.7b-a100-1"


def _row(**change: str) -> dict[str, str]:
    """Lambda's HF GPT-2 2.7B row (plain PyTorch, fp16 autocast, fp32 state), as changed."""
    return dict(next(r for r in training_rows(FLASH) if r["id"] == A100), **change)


def _model(cfg, **change):
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, **change))


# --- 1. the final norm's gradient tensors ---------------------------------------------------

def test_the_final_norm_is_among_the_last_stage_s_gradient_tensors():
    """GPT-2's ``ln_f`` (weight and bias) is on the last stage's list, not on another's; an
    RMSNorm model adds one tensor."""
    c = row_config(_row())
    h = float(c.model.hidden_size)
    middle = _grad_tensors(c, range(2), False, False)
    last = _grad_tensors(c, range(2), False, True)
    assert len(last) == len(middle) + 2 + 1  # ln_f's two and the (tied) output matrix
    assert last.count(h) - middle.count(h) == 2
    rms = _model(c, normalization="rmsnorm")
    assert len(_grad_tensors(rms, range(2), False, True)) == \
        len(_grad_tensors(rms, range(2), False, False)) + 1 + 1


@pytest.mark.parametrize("seed", range(6))
def test_the_gradient_tensors_are_the_stage_s_parameter_tensors(seed):
    """Every stage's gradient tensors are its parameter tensors as ZeroRedundancyOptimizer
    partitions them (``zero1_broadcast.stage_tensors``, which held the final norm before):
    the same elements, tensor by tensor, over random models, TP sizes and stage ends."""
    rng = random.Random(seed)
    c = row_config(_row())
    c = _model(c, normalization=rng.choice(["layernorm", "rmsnorm"]),
               position_embedding=rng.choice(["learned", "rope"]),
               tied_embeddings=rng.choice([True, False]))
    for first, last in ((True, False), (False, True), (True, True), (False, False)):
        layers = range(rng.randint(1, 4))
        dense, experts = stage_tensors(c, layers, first, last)
        assert sorted(_grad_tensors(c, layers, first, last)) == sorted(dense + experts)


def test_the_tensors_are_the_hf_model_s_own():
    """transformers' own GPT-2 (tiny, on the meta device; ``c_attn`` one fused QKV as
    trainsim lays it out): one gradient tensor per parameter that requires a gradient, the
    final norm's included, element for element."""
    pytest.importorskip("torch")
    tr = pytest.importorskip("transformers")
    import torch

    gpt2 = {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 128,
            "n_positions": 32}
    for spec in (gpt2,):
        cfg = tr.AutoConfig.for_model(**spec)
        with torch.device("meta"):
            model = tr.AutoModelForCausalLM.from_config(cfg)
        theirs = sorted(float(p.numel()) for p in model.parameters() if p.requires_grad)
        c = row_config(_row())
        c = dataclasses.replace(c, model=_hf_model(spec))
        assert sorted(_grad_tensors(c, range(2), True, True)) == theirs, spec["model_type"]


def _hf_model(spec: dict):
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.json"
        path.write_text(json.dumps(spec))
        return model_from_hf_config(path)


def test_autograd_s_add_launches_a_kernel_per_final_norm_tensor():
    """The row's fp32 ``.grad +=`` (DDP under autocast, torch 1.14: every micro-batch adds) on
    its one stage: a kernel per tensor, ln_f's weight and bias among them (the tied output
    matrix is the embedding's tensor), 12 bytes an element."""
    c = row_config(_row())
    layers = range(c.model.num_layers)
    (op,) = fp32_grad_accumulation(c, layers, True, True)
    tensors = _grad_tensors(c, layers, True, True)
    assert op.kernels == len(tensors) == len(_grad_tensors(c, layers, True, False)) + 2
    assert op.bytes == pytest.approx(12.0 * sum(tensors))


# --- 2. gated gates and relu2 as their eager kernels ---------------------------------------

def _parts():
    return load_script(ROOT / "benchmarks" / "hfgpt59_parts.py")


def _fp32_ops(parts) -> frozenset[str]:
    """CUDA autocast's fp32 list from the installed header, with ``square``: a composite of
    ``pow(x, 2)`` whose inner call meets autocast's ``pow`` kernel (the emulation acts on the
    function called, ``square``, so it is named here)."""
    ops = parts.autocast_fp32_ops()
    return ops | {"square"} if "pow" in ops else ops


def _module_fn(name: str, gated: bool, chunked: bool, n: int):
    import torch
    acts = pytest.importorskip("transformers.activations")
    act = acts.ClassInstantier(acts.ACT2CLS)[name]
    if chunked:  # Phi-3's gate_up_proj(x).chunk(2, -1)
        def fn(x):
            gate, up = x.chunk(2, dim=-1)
            return up * act(gate)
        return fn, 2 * n
    if gated:  # GemmaMLP / LlamaMLP: act_fn(gate_proj(x)) * up_proj(x)
        up = torch.empty(n, dtype=torch.float16, device="meta", requires_grad=True)
        return (lambda g: act(g) * up), n
    return act, n


GATED_CASES = [(name, gated, autocast) for name in sorted(HF_ACT_NAMES)
               for gated in (False, True) for autocast in (False, True) if gated or name == "relu2"]


@pytest.mark.parametrize(("name", "gated", "autocast"), GATED_CASES)
def test_each_gated_chain_is_the_modules_own_kernels(name, gated, autocast):
    """transformers' own module (relu2 alone; every GELU-family and relu2 gate times up),
    dispatched on the meta device with a 16-bit input, launches the kernels and moves the bytes
    priced, forward and backward, under the emulation of CUDA autocast where asked."""
    torch = pytest.importorskip("torch")
    parts = _parts()
    ops = _fp32_ops(parts)
    if autocast and "pow" not in ops:
        pytest.skip("no ATen autocast header installed")
    n = 4096
    fn, size = _module_fn(name, gated, False, n)
    run = parts.autocast_fp32(fn, ops) if autocast else fn
    x = torch.empty(size, dtype=torch.float16, device="meta", requires_grad=True)
    c = parts.count_ops(run, x)
    act = eager_chain(name, autocast)
    chain = gated_chain(act) if gated else act
    # (gelu_10's clamp backward makes one 2-byte scalar: a byte per 2,048 elements, left out)
    assert c["forward"]["kernels"] == chain.kernels
    assert c["forward"]["bytes"] / n == pytest.approx(chain.bytes_per_element(2), rel=1e-4)
    assert c["backward"]["kernels"] == chain.bwd_kernels
    assert c["backward"]["bytes"] / n == pytest.approx(chain.bwd_bytes_per_element(2), rel=1e-4)


@pytest.mark.parametrize("name", ["relu2", "gelu_new", "quick_gelu"])
@pytest.mark.parametrize("autocast", [False, True])
def test_the_chunked_gate_adds_the_cat(name, autocast):
    """Gate and up as halves of one projection: the forward's ``split`` is a view, the
    backward joins the two gradients with one ``cat`` more than the separate projections'."""
    torch = pytest.importorskip("torch")
    parts = _parts()
    ops = _fp32_ops(parts)
    if autocast and "pow" not in ops:
        pytest.skip("no ATen autocast header installed")
    fn, size = _module_fn(name, True, True, 512)
    run = parts.autocast_fp32(fn, ops) if autocast else fn
    c = parts.count_ops(run, torch.empty(size, dtype=torch.float16, device="meta",
                                         requires_grad=True))
    chain = gated_chain(eager_chain(name, autocast), chunked=True)
    assert [o for o in c["forward"]["ops"] if o != "split"] and \
        len([o for o in c["forward"]["ops"] if o != "split"]) == chain.kernels
    assert c["backward"]["ops"][-1] == "cat" and c["backward"]["kernels"] == chain.bwd_kernels


@pytest.mark.parametrize(("name", "gated", "autocast"), GATED_CASES)
def test_saved_bytes_are_what_autograd_keeps(name, gated, autocast):
    """What autograd saves (``saved_tensors_hooks``, each storage once) over transformers' own
    module on a 16-bit CPU tensor, per gate element, less the up projection's 16-bit tensor
    where gated... kept as the chain says: relu2 2 (the relu output ``pow`` keeps too), under
    autocast 6 (and its fp32 cast); gated gelu_new under autocast 20 (its 14, its fp32 output,
    up)."""
    torch = pytest.importorskip("torch")
    acts = pytest.importorskip("transformers.activations")
    parts = _parts()
    ops = _fp32_ops(parts)
    if autocast and "pow" not in ops:
        pytest.skip("no ATen autocast header installed")
    n = 4096
    act = acts.ClassInstantier(acts.ACT2CLS)[name]
    up = torch.randn(n).to(torch.float16).requires_grad_()
    fn = (lambda g: act(g) * up) if gated else act
    run = parts.autocast_fp32(fn, ops) if autocast else fn
    x = torch.randn(n).to(torch.float16).requires_grad_()
    kept = parts.saved_bytes(run, x)
    chain = eager_chain(name, autocast)
    want = gated_chain(chain).saved_per_element(2) if gated else chain.saved_per_element(2)
    assert kept / n == want


def test_the_counts_by_hand():
    """Counted from derivatives.yaml (module docstrings), without torch: relu2 2 + 4 kernels
    (4 and 6 under autocast, 24 and 46 bytes at e = 2); gated gelu_new under autocast 11 / 86
    forward and 18 / 146 backward, keeping 20 bytes a gate element (14 beyond a one-kernel
    gate's 6); a one-kernel gate adds nothing."""
    plain, cast = eager_chain("relu2", False), eager_chain("relu2", True)
    assert (plain.kernels, plain.bytes_per_element(2), plain.bwd_kernels,
            plain.bwd_bytes_per_element(2), plain.saved_per_element(2)) == (2, 8, 4, 20, 2)
    assert (cast.kernels, cast.bytes_per_element(2), cast.bwd_kernels,
            cast.bwd_bytes_per_element(2), cast.saved_per_element(2)) == (4, 24, 6, 46, 6)
    g = gated_chain(eager_chain("gelu_new", True))
    assert (g.kernels, g.bytes_per_element(2), g.bwd_kernels, g.bwd_bytes_per_element(2),
            g.saved_per_element(2)) == (11, 86, 18, 146, 20)
    assert gated_saved_beyond_fused("gelu_new", True) == 14.0
    assert gated_saved_beyond_fused("gelu_pytorch_tanh", True) == 0.0
    assert gated_saved_beyond_fused(None, True) == 0.0
    assert saved_bytes_per_element("relu2", True) == 6.0


def test_a_gated_hf_layer_prices_its_gate_chain():
    """A Llama-shaped model whose gate is ``gelu_new`` under the row's plain PyTorch loop
    (eager modules, fp16 autocast): the MLP's activation is the gated chain (11 kernels
    forward, 18 backward, 86 / 146 bytes a gate element) and each layer keeps 14 bytes a gate
    element more; Gemma's ``gelu_pytorch_tanh`` gate prices as the eager SwiGLU did (one
    kernel), in time and memory; compiled, one kernel again."""
    base = row_config(_row())
    llama = _model(base, activation="swiglu", normalization="rmsnorm", position_embedding="rope",
                   ffn_hidden_size=6912, hidden_act=None)
    new = _model(llama, hidden_act="gelu_new")
    t = new.training
    gate = t.micro_batch_size * t.seq_length * new.model.ffn_size
    op = activation_op(True, gate, True, False, "gelu_new", True)
    assert (op.kernels, op.bytes / gate) == (11, 86)
    assert (backward_bytes(op)[1], backward_bytes(op)[0] / gate) == (18, 146)
    more = activation_bytes_per_layer(new) - activation_bytes_per_layer(llama)
    assert more == pytest.approx(14.0 * gate)
    gemma = _model(llama, hidden_act="gelu_pytorch_tanh")
    assert activation_bytes_per_layer(gemma) == activation_bytes_per_layer(llama)
    assert activation_op(True, gate, True, False, "gelu_pytorch_tanh", True) == \
        activation_op(True, gate, True, False, None, True)
    compiled = dataclasses.replace(new, training=dataclasses.replace(t, compile=True))
    assert activation_bytes_per_layer(compiled) == activation_bytes_per_layer(
        dataclasses.replace(llama, training=compiled.training))


def test_relu2_two_matrix_memory_and_config(tmp_path):
    """Nemotron's config.json (two matrices, relu2) keeps its name; under the plain loop's
    autocast each layer keeps the relu output and its fp32 cast (6 bytes an fc1 element) where
    the fused GELU kept 2."""
    spec = {"model_type": "nemotron", "hidden_size": 256, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 1000, "intermediate_size": 1024,
            "hidden_act": "relu2"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(spec))
    m = model_from_hf_config(path)
    assert (m.activation, m.hidden_act) == ("gelu", "relu2")
    base = row_config(_row())
    relu2 = _model(base, hidden_act="relu2")
    plain = _model(base, hidden_act=None)
    t = base.training
    fc1 = t.micro_batch_size * t.seq_length * base.model.ffn_size
    more = activation_bytes_per_layer(relu2) - activation_bytes_per_layer(plain)
    assert more == pytest.approx(4.0 * fc1)


# --- 3. the search's ZeRO-1 bound under ZeroRedundancyOptimizer ---------------------------

def test_the_bound_s_broadcasts_are_the_simulated_ones():
    """The Lambda row on 8 GPUs under ZeRO-1: the bound's tail prices the broadcasts the
    simulator issues after the step (one per tensor from its owner), to the bit, not an
    all-gather of the stage."""
    c = row_config(_row(num_gpus="8", zero_stage="1"))
    pricer = Pricer(c)
    tasks, _ = build_tasks(c, pricer)
    simulated = sum(t.duration_s for t in tasks if t.label.startswith("param broadcast"))
    widths = {"dp_cp": param_gather_width(c, 1.0, 0.0)}
    assert simulated > 0
    assert param_broadcasts_s(c, pricer, 0, widths) == pytest.approx(simulated, rel=1e-12)


def _base(model: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_base(model, "h100-sxm-80gb", 16, 64, 4096, 8, 400, "bf16",
                          ("training.framework=pytorch",))


@pytest.mark.parametrize("model", ["llama2-7b", "gpt3-1.3b"])
def test_the_zero1_bound_stays_below_the_simulated_time(model):
    """Sampled ZeRO-1 groups of 16 GPUs under the pytorch profile (DDP with
    ZeroRedundancyOptimizer), each variant class's first and last: the refined bound never
    exceeds the simulated iteration."""
    base = _base(model)
    space = SearchSpace(zero=(1,), max_micro_batch=2, max_vpp=1).held_by(base)
    keys = [k for k in loadable_keys(space, base, 16)]
    assert keys
    drawn = random.Random(61).sample(keys, min(6, len(keys)))
    bounds = Bounds(base)
    checked = 0
    for k in drawn:
        variants = space.variants(k)
        for cand in {variants[0], variants[-1]}:
            assert bounds.refined(cand) <= evaluate(cand, base).iteration_time_s, cand.label()
            checked += 1
    assert checked >= 6 and bounds.failed is None


def test_a_biasless_layernorm_s_final_norm_is_one_tensor_everywhere():
    """A LayerNorm without bias (Cohere, MPT's no_bias: ``norm_bias`` false) has one final-norm
    tensor in every list that holds the head's tensors: the gradient tensors, DDP's bucket
    order and FSDP's root unit, which counted LayerNorm as two whatever its bias."""
    from trainsim.workload.ddp_buckets import _bucket_order
    from trainsim.workload.fsdp_optimizer import fsdp_optimizer_pieces

    c = row_config(_row())
    h = float(c.model.hidden_size)
    for bias, want in ((True, 2), (False, 1)):
        m = _model(c, norm_bias=bias, tied_embeddings=False)
        tail = _grad_tensors(m, range(1), False, True)
        head = _grad_tensors(m, range(1), False, False)
        assert tail.count(h) - head.count(h) == want
        dense, _ = _bucket_order(m, range(1), False, True)
        assert [n for n, _ in dense[:want + 1]] == [m.model.vocab_size * h] + [h] * want
        assert [n for n, _ in dense].count(h) == head.count(h) + want
        assert fsdp_optimizer_pieces(m, 0).count(h) == \
            sum(n == h for n in _grad_tensors(m, range(m.model.num_layers), True, True))
