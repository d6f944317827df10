"""torcheager60 (2026-11-29): what a Hugging Face GELU-family module's eager chain keeps for its
backward (``workload.hf_activations.saved_bytes_per_element``), charged in activation memory where
the chain is priced (``memory.layer_activations``). RESULTS.md "60th session, torcheager60"."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from helpers_cli import load_script
from helpers_files import training_rows

from trainsim.memory.layer_activations import activation_bytes_per_layer
from trainsim.validate.training import row_config
from trainsim.workload.hf_activations import HF_GELU_NAMES, saved_bytes_per_element

ROOT = Path(__file__).resolve().parents[1]
FLASH = ROOT / "benchmarks" / "training_flashattn.csv"
A100 = "flashattn-lambda-hf-gpt3-2.7b-a100-1"


def _row(**change: str) -> dict[str, str]:
    return dict(next(r for r in training_rows(FLASH) if r["id"] == A100), **change)


def _saved_by_autograd(name: str, autocast: bool) -> float:
    """Bytes per input element of the tensors autograd saves (``saved_tensors_hooks``, each
    storage once) running transformers' own ``ACT2FN[name]`` on a 16-bit CPU tensor, under the
    emulation of CUDA autocast (benchmarks/hfgpt59_parts.py ``autocast_fp32``) where asked."""
    torch = pytest.importorskip("torch")
    acts = pytest.importorskip("transformers.activations")
    parts = load_script(ROOT / "benchmarks" / "hfgpt59_parts.py")
    module = acts.ClassInstantier(acts.ACT2CLS)[name]
    fn = parts.autocast_fp32(module) if autocast else module
    n = 4096
    x = torch.randn(n).to(torch.float16).requires_grad_()
    return parts.saved_bytes(fn, x) / n


@pytest.mark.parametrize("name", sorted(HF_GELU_NAMES))
@pytest.mark.parametrize("autocast", [False, True])
def test_saved_bytes_are_what_autograd_keeps(name, autocast):
    """Every GELU-family module keeps for its backward what ``saved_bytes_per_element`` says
    (fp16 input): one kernel 2 bytes (its input), gelu_new 8, under autocast 14 (fp32 ``pow``
    input, tanh output and ``1 + tanh``, the 16-bit ``0.5 * x``)."""
    pytest.importorskip("torch")  # (autocast_fp32_ops imports it: skipped, not failed)
    parts = load_script(ROOT / "benchmarks" / "hfgpt59_parts.py")
    if autocast and "pow" not in parts.autocast_fp32_ops():
        pytest.skip("no ATen autocast header installed")
    assert _saved_by_autograd(name, autocast) == saved_bytes_per_element(name, autocast, 2)


def test_gelu_new_by_hand():
    """Counted by hand from derivatives.yaml (module docstring): 3 fp32 + one 16-bit."""
    assert saved_bytes_per_element("gelu_new", True) == 14.0
    assert saved_bytes_per_element("gelu_new", False) == 8.0
    assert saved_bytes_per_element(None, True) == 2.0
    assert saved_bytes_per_element("gelu", True) == 2.0


def test_memory_charges_the_chain_where_it_is_priced():
    """The Lambda HF GPT-2 2.7B row (gelu_new, the model's eager modules under fp16 autocast):
    each layer keeps 12 more bytes per fc1 element than with the fused GELU, 1024 tokens x
    10240 x 12 = 126 MB a layer, 4.0 GB over the 32 layers; compiled, it keeps the fused
    GELU's."""
    new, old = row_config(_row()), row_config(_row(activation=""))
    assert new.model.hidden_act == "gelu_new" and old.model.hidden_act is None
    more = activation_bytes_per_layer(new) - activation_bytes_per_layer(old)
    f, tokens = new.model.ffn_size, new.training.micro_batch_size * new.training.seq_length
    assert more == pytest.approx(12.0 * tokens * f)
    assert 32 * more / 1e9 == pytest.approx(4.03, abs=0.01)
    def compiled(cfg):
        return dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, compile=True))
    assert activation_bytes_per_layer(compiled(new)) == activation_bytes_per_layer(compiled(old))
