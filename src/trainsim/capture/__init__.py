"""Workloads from real PyTorch models: record a training step on the meta device (no GPU, no
weights) and run it through trainsim's engine.

    from trainsim.capture import capture, captured_layer_source
    cap = capture("examples/hf/llama3-8b/config.json", batch=1, seq=8192)
    result = trainsim.simulate(cfg, layer_source=captured_layer_source(cap))

torch (and transformers, for Hugging Face configs) are imported only when a capture runs.
"""

from trainsim.capture.capture import Capture, capture
from trainsim.capture.graph import captured_layer_source, layer_ops

__all__ = ["Capture", "capture", "captured_layer_source", "layer_ops"]
