"""robust53: session 52's left edges (a count's SI text at the typed edge, Chakra's
INVALID_NODE, the DualPipe refusal on a hybrid model) and the thirty-third fuzz round's
classes (``benchmarks/fuzz53.py``)."""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from pathlib import Path

import pytest
from helpers import cli, one_error_line

from trainsim.errors import ConfigError, TrainsimError, TrainsimWarning

SMALL = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {"pp": 2}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}


def _small(**sections):
    cfg = json.loads(json.dumps(SMALL))
    for key, fields in sections.items():
        cfg.setdefault(key, {}).update(fields)
    return cfg


# ------------------------------------------------------------ a count's SI text, typed edge

@pytest.mark.parametrize("text", ["15T", "300b", " 2 M ", "1_000B", "1.5e13", "7e9"])
def test_the_typed_training_config_reads_a_token_count_as_a_file_does(text):
    """edges52 lead 1: ``TrainingConfig(train_tokens="15T")`` was refused ("must be a finite
    number") while a file, ``--set``, the service and ``--tokens`` read it; now every entry
    point gives the same float, and ``dataclasses.replace`` too."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.config import TrainingConfig
    from trainsim.search.whatif import parse_number

    typed = TrainingConfig(global_batch_size=16, seq_length=512, train_tokens=text)
    read = run_config_from_dict(_small(training={"train_tokens": text})).training
    assert typed.train_tokens == read.train_tokens == parse_number(text, "--tokens")
    assert type(typed.train_tokens) is float and typed == read
    plain = TrainingConfig(global_batch_size=16, seq_length=512)
    assert dataclasses.replace(plain, train_tokens=text) == typed


@pytest.mark.parametrize("text,said", [
    ("15X", ("training.train_tokens must be a number (suffixes K, M, B/G, T, P allowed: 15T), "
             "got '15X'")),
    ("1_0T", "an underscore in a number separates digits in threes"),
    ("infT", "training.train_tokens='infT' must be a finite number"),
    ("nan", "training.train_tokens='nan' must be a finite number"),
    ("1k", "training.train_tokens=1000 is fewer tokens than one global batch"),
])
def test_the_typed_edge_refuses_a_bad_count_text_in_one_line(text, said):
    """The same grammar refuses the same texts, each in one line naming the field."""
    from trainsim.config import TrainingConfig

    with pytest.raises(ConfigError) as err:
        TrainingConfig(global_batch_size=16, seq_length=512, train_tokens=text)
    assert said in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_other_number_fields_still_refuse_text_at_the_typed_edge():
    """Only a field marked ``SI_SUFFIXED`` reads text: a batch size stays a number."""
    from trainsim.config import TrainingConfig

    with pytest.raises(ConfigError, match="global_batch_size='16' must be a whole number"):
        TrainingConfig(global_batch_size="16", seq_length=512)


# ------------------------------------------------------------ Chakra's INVALID_NODE

@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    from trainsim.catalog import run_config_from_dict
    from trainsim.interop.chakra import export_chakra
    from trainsim.interop.chakra_et import read_et

    d = tmp_path_factory.mktemp("chakra_robust53")
    ex = export_chakra(run_config_from_dict(_small()), d / "w")
    return d / "w", ex.paths[0], ex.paths[0].read_bytes(), read_et(ex.paths[0])[1]


def test_an_invalid_node_is_refused_in_one_line(traces):
    """mlcommons/chakra@6dc63e14 schema/protobuf/et_def.proto ``enum NodeType``: 0 is
    INVALID_NODE (and what a node with no type field decodes to). edges52 read it as a
    communication node."""
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import write_et

    prefix, path, data, nodes = traces
    write_et(path, [dataclasses.replace(nodes[0], type=0), *nodes[1:]])
    try:
        with pytest.raises(TrainsimError) as err:
            read_chakra(prefix)
    finally:
        path.write_bytes(data)
    msg = str(err.value)
    assert f"w.0.et: node {nodes[0].id} ({nodes[0].name}) has type 0 (INVALID_NODE, or no " \
        "type field), which Chakra's schema marks invalid; a node type is one of 1 " \
        "METADATA_NODE, " in msg and msg.endswith("10 CHECKPOINT_NODE") and "\n" not in msg, msg
    assert read_chakra(prefix) > 0  # the file restored reads


def test_a_node_without_a_type_field_is_refused(traces):
    """A node whose encoding lacks field 3 (``type``), as a protobuf writer leaves a zero
    out, decodes to 0 and is refused alike."""
    from trainsim.interop import wire
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import N_TYPE, decode_node, encode_node

    prefix, path, data, nodes = traces
    messages = list(wire.read_delimited(data))
    assert messages[1] == encode_node(nodes[0])
    zero = encode_node(dataclasses.replace(nodes[0], type=0))
    typeless = zero.replace(wire.f_varint(N_TYPE, 0), b"", 1)
    assert len(typeless) == len(zero) - 2 and decode_node(typeless).type == 0
    path.write_bytes(wire.write_delimited([messages[0], typeless, *messages[2:]]))
    try:
        with pytest.raises(TrainsimError, match="has type 0 .INVALID_NODE, or no type field"):
            read_chakra(prefix)
    finally:
        path.write_bytes(data)


def _rewritten(traces, nodes) -> float:
    """The iteration of the trace set with rank 0's nodes replaced by ``nodes`` (its metadata
    kept), the file restored after."""
    from trainsim.interop import wire
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import encode_node

    prefix, path, data, _ = traces
    head = next(wire.read_delimited(data))
    path.write_bytes(wire.write_delimited([head, *map(encode_node, nodes)]))
    try:
        return read_chakra(prefix)
    finally:
        path.write_bytes(data)


@pytest.mark.parametrize("order", ["reversed", "shuffled", "rotated"])
def test_a_trace_listing_nodes_out_of_dependency_order_reads_as_written(traces, order):
    """fuzz53 ``chakraorder``: Chakra's schema orders no nodes (a node names its dependencies
    by id; ASTRA-sim's feeder issues it once they are done), but the reader handed them to the
    engine, whose streams run tasks in submission order, as listed: a reversed trace was
    "deadlock: 130 tasks never ran". Now read in dependency order, the same iteration."""
    import random

    from trainsim.interop.chakra import read_chakra

    nodes = list(traces[3])
    if order == "reversed":
        nodes.reverse()
    elif order == "shuffled":
        random.Random(53).shuffle(nodes)
    else:
        nodes = nodes[7:] + nodes[:7]
    assert _rewritten(traces, nodes) == pytest.approx(read_chakra(traces[0]), rel=1e-12)


def test_a_node_id_given_twice_is_refused_in_one_line(traces):
    """Before, the later node took the id in silence: the dependencies on it waited for
    another node (a wrong iteration, or a "deadlock")."""
    nodes = traces[3]
    extra = dataclasses.replace(nodes[-1], id=nodes[0].id, ctrl_deps=[], data_deps=[])
    with pytest.raises(TrainsimError) as err:
        _rewritten(traces, [*nodes, extra])
    msg = str(err.value)
    assert f"w.0.et: node id {nodes[0].id} is given twice ({nodes[0].name} and " \
        f"{nodes[-1].name})" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("how", ["self", "pair"])
def test_a_dependency_cycle_is_refused_naming_a_node_in_it(traces, how):
    """Before: the engine's "task 0 (...) depends on invalid task 0", or "deadlock: 130 tasks
    never ran", naming no file or node of the trace."""
    nodes = list(traces[3])
    a = next(i for i, n in enumerate(nodes) if n.ctrl_deps)
    if how == "self":
        nodes[a] = dataclasses.replace(nodes[a], ctrl_deps=[*nodes[a].ctrl_deps, nodes[a].id])
    else:
        b = next(i for i, n in enumerate(nodes) if n.id == nodes[a].ctrl_deps[0])
        nodes[b] = dataclasses.replace(nodes[b], ctrl_deps=[*nodes[b].ctrl_deps, nodes[a].id])
    with pytest.raises(TrainsimError) as err:
        _rewritten(traces, nodes)
    msg = str(err.value)
    assert "w.0.et: node " in msg and "depends on itself through a cycle of dependencies" \
        in msg and "\n" not in msg, msg
    named = int(msg.split("w.0.et: node ")[1].split(" ")[0])
    assert named in ({nodes[a].id} if how == "self" else {nodes[a].id, nodes[b].id}), msg


# ------------------------------------------------------------ DualPipe on a hybrid model

HYBRID = {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4, "vocab_size": 1024,
          "hybrid_layer_pattern": "M*M-M*M-"}
VALID = "gpipe, 1f1b, interleaved_1f1b, zb_h1, zb_h2, zb_2p, zb_v, interleaved_zb, looped_bfs"


@pytest.mark.parametrize("schedule", ["dualpipe", "dualpipe_v"])
def test_dualpipe_on_a_dense_hybrid_model_says_why_and_what_runs(schedule):
    """edges52 lead 3: the refusal said DualPipe's pairs "overlap the expert exchange" for a
    hybrid model with no experts, and named no schedule but "a zero-bubble schedule"; now it
    names the mechanism (Megatron-core's combined-1F1B schedule plans, GPT models only) and
    every schedule that runs, each of which does."""
    from trainsim.catalog import run_config_from_dict

    par = {"pp": 2, "pipeline_schedule": schedule, **({"vpp": 2} if schedule[-1] == "v" else {})}
    with pytest.raises(ConfigError) as err:
        run_config_from_dict(_small(model=HYBRID, parallel=par))
    msg = str(err.value)
    assert "expert exchange" not in msg and "with experts or without" in msg, msg
    assert msg.endswith(f"use one of {VALID}") and "\n" not in msg, msg


@pytest.mark.parametrize("schedule", VALID.split(", "))
def test_every_schedule_the_dualpipe_refusal_names_runs_a_hybrid_model(schedule):
    from trainsim.catalog import run_config_from_dict
    from trainsim.simulator import simulate

    vpp = {"vpp": 2} if schedule in ("interleaved_1f1b", "interleaved_zb", "zb_v") else {}
    cfg = run_config_from_dict(_small(model=HYBRID, parallel={
        "pp": 2, "pipeline_schedule": schedule, **vpp}))
    assert simulate(cfg).iteration_time_s > 0


def test_search_says_the_same_for_dualpipe_alone_and_among_others():
    """``search --schedules dualpipe`` (refused, exit 2) and ``dualpipe,1f1b`` (dropped with a
    warning) give the config's reason."""
    from trainsim.search.cli_inputs import build_base, search_space

    base = build_base("nemotron-h-8b", "h100-sxm-80gb", 8, 32, 4096, 8, 400.0, "bf16")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        search_space(None, None, None, None, 1, "none", None, "search", base=base,
                     schedules="dualpipe,1f1b")
    said = [str(w.message) for w in said if issubclass(w.category, TrainsimWarning)]
    assert len(said) == 1 and "expert exchange" not in said[0], said
    assert said[0].endswith(f"use one of {VALID}"), said
    r = cli("search", "nemotron-h-8b", "--gpu", "h100", "--gpus", "8", "--global-batch", "32",
            "--seq", "4096", "--schedules", "dualpipe", "--tp", "1", "--pp", "2",
            "--recompute", "none")
    line = one_error_line(r)
    assert line.startswith("error: --schedules dualpipe with model.hybrid_layer_pattern: ")
    assert "expert exchange" not in line and line.endswith(VALID), line


# ------------------------------------------------------------ fuzz53: the round

def _fuzz53():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fuzz53
    return fuzz53


def test_fuzz53_samples_find_no_class():
    """A seeded sample of the round's fast surfaces (the whole round: -m slow)."""
    assert _fuzz53().main(["--only", "chakraorder,bf16layers,framenames", "--count", "12"]) == 0


@pytest.mark.slow
def test_the_whole_fuzz53_round_finds_no_class():
    assert _fuzz53().main(["--count", "400"]) == 0
