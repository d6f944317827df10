"""Which collectives XLA's SPMD partitioner makes of a MaxText-shaped step's weight gradients, in
which dtype, and in which post order XLA's AllReduceCombiner meets the data-axis all-reduces
(``workload.xla_combine``). A check, not an input: nothing here feeds trainsim.

The step is MaxText's at AI-Hypercomputer/maxtext@efb6d9e4a as the A3 scripts run it, shrunk:
``scan_layers=false`` (a ``layers_{i}`` dict entry per layer, MaxText/layers/models.py L289),
fp32 weights cast to bf16 at each dot (DenseGeneral, linears.py), the layer under
``jax.checkpoint`` with ``checkpoint_dots_with_no_batch_dims``, the logits dot in fp32
(``logits_dot_in_fp32``), ``optax.clip_by_global_norm(1.0)`` then adamw (train.py L254-263), on a
(data, fsdp) mesh with the weights' ``embed`` axis on fsdp and the batch on both (base.yml's
logical axis rules). Run with JAX 0.4.26 (CPU wheel; the partitioner is the same pass on GPU):

    python -m venv /tmp/j62v && /tmp/j62v/bin/pip install "jax[cpu]==0.4.26" optax==0.2.2
    /tmp/j62v/bin/python benchmarks/jax62_hlo.py [DATA FSDP LAYERS]      # default 2 8 12

It prints the data-axis all-reduces (replica groups that pair one device of each fsdp group)
with their dtype and shape, then their layers in the entry computation's post order
(``post_order``: operands in order, as HloComputation::MakeInstructionPostOrder walks them).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path


def entry_instructions(text: str) -> tuple[dict[str, tuple[list[str], str]], str]:
    """name -> (operand names, line) of an HLO text module's ENTRY computation, and its ROOT."""
    body = text[text.index("ENTRY"):]
    body = body[body.index("{") + 1:]
    out: dict[str, tuple[list[str], str]] = {}
    root = ""
    for line in body.splitlines():
        if line.strip() == "}":
            break
        m = re.match(r"\s*(ROOT )?%?([\w.\-]+) = .*? [a-z][\w\-]*\((.*)$", line)
        if not m:
            continue
        rest, depth, i = m.group(3), 1, 0
        while depth and i < len(rest):
            depth += {"(": 1, ")": -1}.get(rest[i], 0)
            i += 1
        ops = [o.strip().split(" ")[-1].lstrip("%") for o in rest[:i - 1].split(",") if o.strip()]
        out[m.group(2)] = (ops, line)
        if m.group(1):
            root = m.group(2)
    return out, root


def post_order(ins: dict[str, tuple[list[str], str]], root: str) -> list[str]:
    """Depth-first post order from ``root``, operands in order."""
    seen: set[str] = set()
    order: list[str] = []
    stack = [(root, 0)]
    while stack:
        name, k = stack.pop()
        if k == 0:
            if name in seen:
                continue
            seen.add(name)
        ops = [o for o in ins[name][0] if o in ins]
        if k < len(ops):
            stack += [(name, k + 1), (ops[k], 0)]
        else:
            order.append(name)
    return order


def data_axis_all_reduces(text: str, fsdp: int) -> list[tuple[str, str, str]]:
    """(dtype[shape], layer or '-', name) of each all-reduce over the data axis (groups of one
    device per fsdp group: ``{0,FSDP},...``), in post order."""
    ins, root = entry_instructions(text)
    out = []
    for name in post_order(ins, root):
        line = ins[name][1]
        if " all-reduce(" in line and re.search(rf"replica_groups=\{{\{{0,{fsdp}[,}}]", line):
            layer = re.findall(r"layers_\d+", line)
            out.append((line.split(" = ")[1].split(" ")[0].split("{")[0],
                        layer[0] if layer else "-", name))
    return out


def _step_module(data: int, fsdp: int, layers: int, dump: str) -> str:
    os.environ["XLA_FLAGS"] = (f"--xla_force_host_platform_device_count={data * fsdp} "
                               f"--xla_dump_to={dump} --xla_dump_hlo_pass_re=spmd-partitioning")
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    h, f, v, t = 256, 512, 512, 128
    mesh = Mesh(np.array(jax.devices()).reshape(data, fsdp), ("data", "fsdp"))
    batch = ("data", "fsdp")

    def ps(*a):
        return NamedSharding(mesh, P(*a))
    key = jax.random.PRNGKey(0)

    def w(*shape):
        return jax.random.normal(key, shape) * 0.02
    params = {"token_embedder": {"embedding": w(v, h)}, "decoder": {
        "decoder_norm": {"scale": jnp.ones((h,))}, "logits_dense": w(h, v),
        **{f"layers_{i}": {"pre_norm": {"scale": jnp.ones((h,))},
                           "post_norm": {"scale": jnp.ones((h,))},
                           "self_attention": {n: w(h, h) for n in ("query", "key", "value", "out")},
                           "mlp": {"wi_0": w(h, f), "wi_1": w(h, f), "wo": w(f, h)}}
           for i in range(layers)}}}

    def spec(path, x):
        name = jax.tree_util.keystr(path)
        if x.ndim <= 1:
            return ps()
        return ps(None, "fsdp") if ("wo" in name or "embedding" in name) else ps("fsdp", None)

    def dense(x, k):  # DenseGeneral: input and kernel cast to bf16 before the dot
        return jnp.dot(x.astype(jnp.bfloat16), k.astype(jnp.bfloat16))

    def rms(x, s):
        xf = x.astype(jnp.float32)
        return (xf * jax.lax.rsqrt(jnp.mean(xf * xf, -1, keepdims=True) + 1e-5) * s
                ).astype(jnp.bfloat16)

    def layer(p, x):
        a, m = p["self_attention"], p["mlp"]
        y = rms(x, p["pre_norm"]["scale"])
        q, k, vv = dense(y, a["query"]), dense(y, a["key"]), dense(y, a["value"])
        s = jax.nn.softmax(jnp.einsum("btd,bsd->bts", q, k).astype(jnp.float32) / 16.0, -1)
        x = x + dense(jnp.einsum("bts,bsd->btd", s.astype(jnp.bfloat16), vv), a["out"])
        y = rms(x, p["post_norm"]["scale"])
        return x + dense(jax.nn.silu(dense(y, m["wi_0"])) * dense(y, m["wi_1"]), m["wo"])

    def loss(p, tok):
        x = jnp.take(p["token_embedder"]["embedding"], tok, axis=0).astype(jnp.bfloat16)
        policy = jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims
        for i in range(layers):
            with jax.named_scope(f"layers_{i}"):
                x = jax.checkpoint(layer, policy=policy)(p["decoder"][f"layers_{i}"], x)
            x = jax.lax.with_sharding_constraint(x, ps(batch, None, None))
        x = rms(x, p["decoder"]["decoder_norm"]["scale"]).astype(jnp.float32)
        return -jnp.mean(jax.nn.log_softmax(jnp.dot(x, p["decoder"]["logits_dense"]))[..., 0])

    tx = optax.chain(optax.clip_by_global_norm(1.0),
                     optax.adamw(1e-4, b1=0.9, b2=0.95, weight_decay=0.1))

    def step(p, o, tok):
        value, g = jax.value_and_grad(loss)(p, tok)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, value
    psh = jax.tree_util.tree_map_with_path(spec, params)
    params = jax.device_put(params, psh)
    opt = jax.jit(tx.init)(params)
    osh = jax.tree_util.tree_map_with_path(spec, opt)
    opt = jax.device_put(opt, osh)
    tok = jax.device_put(jnp.zeros((2 * data * fsdp, t), jnp.int32), ps(batch, None))
    jax.jit(step, in_shardings=(psh, osh, ps(batch, None)),
            out_shardings=(psh, osh, ps())).lower(params, opt, tok).compile()
    done = sorted(Path(dump).glob("*jit_step*after_spmd-partitioning*.txt"))
    return done[-1].read_text()


def main(argv: list[str]) -> int:
    data, fsdp, layers = (int(a) for a in (argv or ["2", "8", "12"]))
    with tempfile.TemporaryDirectory() as dump:
        text = _step_module(data, fsdp, layers, dump)
    rows = data_axis_all_reduces(text, fsdp)
    for kind, layer, name in rows:
        print(f"{name:16s} {kind:18s} {layer}")
    order = list(dict.fromkeys(layer for _, layer, _ in rows))
    print("post order of the layers' data-axis all-reduces:", " ".join(order))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
