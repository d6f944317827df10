"""How long ``trainsim capture`` takes on CPU, and how the capture compares with trainsim.

    python benchmarks/capture_speed.py [--seq 8192]

For Llama-3-8B and Mixtral-8x7B from examples/hf/*/config.json: wall time of one capture
(build on the meta device, forward + backward under the recorder; each in a fresh process so
the transformers import is counted), captured FLOPs of one layer against the analytical
layer, activation bytes against the memory model (less Megatron's fused-QKV buffer, see
tests/test_capture.py), and the iteration time with captured vs analytical layers. Acceptance:
each capture under 60 s, FLOPs within 1 %, activations within 5 %.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"llama3-8b": {"tp": 2, "ep": None}, "mixtral-8x7b": {"tp": 2, "ep": 4}}

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from trainsim.capture import capture, captured_layer_source
cap = capture(sys.argv[1], batch=1, seq=int(sys.argv[2]))
wall = time.perf_counter() - t0
import trainsim
from trainsim.capture.report import analytical_layer_flops, separate_qkv_bytes, single_device
from trainsim.memory import activation_bytes_per_layer
parallel = json.loads(sys.argv[3])
cfg = trainsim.run_config_from_dict({"model": {"hf_config": sys.argv[1]},
    "parallel": {k: v for k, v in parallel.items() if v},
    "training": {"seq_length": int(sys.argv[2]), "micro_batch_size": 1, "global_batch_size": 32},
    "cluster": {"node": "dgx-h100", "num_gpus": 8}})
one = single_device(cfg)
moe = cfg.model.is_moe
path = cap.layer(moe)
model_act = activation_bytes_per_layer(one, moe=moe) - separate_qkv_bytes(one)
flops_a = analytical_layer_flops(one, moe)
t_cap = trainsim.simulate(cfg, layer_source=captured_layer_source(cap)).iteration_time_s
t_ana = trainsim.simulate(cfg).iteration_time_s
print(json.dumps({"capture_wall_s": wall, "capture_s": cap.capture_s, "kernels": len(cap.kernels),
    "layer_flops": cap.layer_flops(path), "analytical_flops": flops_a,
    "flops_error": cap.layer_flops(path) / flops_a - 1,
    "activation_bytes": cap.activation_bytes[path], "memory_model_bytes": model_act,
    "activation_error": cap.activation_bytes[path] / model_act - 1,
    "unmapped": cap.unmapped, "parallel": parallel,
    "iteration_captured_s": t_cap, "iteration_analytical_s": t_ana}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=8192)
    args = ap.parse_args()
    results = {}
    for name, parallel in MODELS.items():
        config = ROOT / "examples" / "hf" / name / "config.json"
        out = subprocess.run([sys.executable, "-c", CHILD, str(config), str(args.seq),
                              json.dumps({**parallel, "sequence_parallel": True})],
                             capture_output=True, text=True, check=True)
        results[name] = r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{name:14s} capture {r['capture_wall_s']:5.1f} s (recorder {r['capture_s']:.1f} s, "
              f"{r['kernels']} kernels) | layer FLOPs {r['layer_flops'] / 1e12:.3f} T "
              f"({100 * r['flops_error']:+.3f}% vs analytical) | activations "
              f"{r['activation_bytes'] / 2**20:.1f} MiB ({100 * r['activation_error']:+.2f}% vs "
              f"memory model) | iteration captured {r['iteration_captured_s'] * 1e3:.1f} ms vs "
              f"analytical {r['iteration_analytical_s'] * 1e3:.1f} ms")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
