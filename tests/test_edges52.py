"""edges52: robust52's four leads. One grammar for a count written with an SI suffix (a
config's ``training.train_tokens: 15T`` as ``--tokens 15T``); the Chakra reader's node types
from the schema; ``search --ep`` / ``--schedules`` members that cannot run dropped with a note
instead of the whole list refused; ``cluster.node: Custom`` as ``custom``."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest
from helpers import cli, one_error_line

from trainsim.errors import ConfigError, TrainsimError, TrainsimWarning

SMALL = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {"pp": 2}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}


def _small(**training):
    cfg = json.loads(json.dumps(SMALL))
    cfg["training"].update(training)
    return cfg


# ------------------------------------------------------------------ one grammar for SI counts

@pytest.mark.parametrize("text,value", [("15T", 15e12), ("300B", 3e11), ("300b", 3e11),
                                        ("1.5e13", 1.5e13), ("20 k", 2e4), ("1_000B", 1e12),
                                        ("4M", 4e6), ("1P", 1e15), ("7e9", 7e9)])
def test_every_reader_of_a_token_count_reads_the_same_text_alike(text, value):
    """``plan --tokens`` (and the service's options.tokens), ``goodput --tokens`` and a
    config's ``training.train_tokens`` are one rule: before, the config refused '15T' ("must
    be a number"), plan's read '300B' but not '300b', goodput's not '2 k'-style spacing alike."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.reliability.cli import parse_tokens
    from trainsim.search.whatif import parse_number

    cfg = run_config_from_dict(_small(train_tokens=text))
    assert cfg.training.train_tokens == parse_number(text, "--tokens") \
        == parse_tokens(text) == pytest.approx(value, rel=1e-15)


def test_a_config_files_suffixed_train_tokens_simulates_as_the_number(tmp_path):
    """A YAML config's ``train_tokens: 15T`` and ``--set training.train_tokens=300b`` run the
    same as the numbers, and the resolved config states the number."""
    import yaml

    from trainsim.catalog import load_run_config, run_config_from_dict

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(_small(train_tokens="15T")))
    assert load_run_config(path).training == \
        run_config_from_dict(_small(train_tokens=15e12)).training
    r = cli("simulate", str(path), "--set", "training.train_tokens=300b", "--format", "json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["config"]["training"]["train_tokens"] == 3e11


@pytest.mark.parametrize("text,says", [("15X", "suffixes K, M, B/G, T, P allowed"),
                                       ("T", "suffixes K, M, B/G, T, P allowed"),
                                       ("1_5T", "looks mistyped"),
                                       ("1e400T", "finite"), ("-15T", "positive")])
def test_a_bad_suffixed_train_tokens_is_one_line_naming_the_field(text, says):
    from trainsim.catalog import run_config_from_dict

    with pytest.raises(ConfigError) as err:
        run_config_from_dict(_small(train_tokens=text))
    msg = str(err.value)
    assert "training.train_tokens" in msg and says in msg and "\n" not in msg, msg


def test_the_service_reads_a_suffixed_train_tokens(tmp_path):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from trainsim.service import Settings, create_app

    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'e52.db'}", workers=0, checkers=0),
                     start_workers=False)
    headers = {"Authorization": f"Bearer {app.state.store.create_token('e')}"}
    with TestClient(app) as client:
        _post_both(client, headers)


def _post_both(client, headers):
    ok = client.post("/api/v1/jobs", json={"kind": "simulate",
                                           "config": _small(train_tokens="15T")},
                     headers=headers)
    assert ok.status_code == 202, ok.text
    bad = client.post("/api/v1/jobs", json={"kind": "simulate",
                                            "config": _small(train_tokens="15X")},
                      headers=headers)
    assert bad.status_code == 422 and "training.train_tokens" in bad.json()["error"], bad.text


# ------------------------------------------------------------------ the Chakra reader's node types

@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    from trainsim.catalog import run_config_from_dict
    from trainsim.interop.chakra import export_chakra
    from trainsim.interop.chakra_et import read_et

    d = tmp_path_factory.mktemp("chakra_edges52")
    ex = export_chakra(run_config_from_dict(json.loads(json.dumps(SMALL))), d / "w")
    return d / "w", ex.paths[0], ex.paths[0].read_bytes(), read_et(ex.paths[0])[1]


def _read_typed(traces, type_: int) -> float:
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import write_et

    prefix, path, data, nodes = traces
    write_et(path, [dataclasses.replace(nodes[0], type=type_), *nodes[1:]])
    try:
        return read_chakra(prefix)
    finally:
        path.write_bytes(data)


@pytest.mark.parametrize("type_", [11, 99, 2**64 - 1])
def test_a_node_type_outside_chakras_schema_is_refused_in_one_line(traces, type_):
    """mlcommons/chakra@6dc63e14 schema/protobuf/et_def.proto ``enum NodeType``: 0 to 10.
    Before, type 99 read as a communication node."""
    with pytest.raises(TrainsimError) as err:
        _read_typed(traces, type_)
    msg = str(err.value)
    assert f"w.0.et: node {traces[3][0].id} " in msg and f"has type {type_}," in msg, msg
    assert "4 COMP_NODE" in msg and "10 CHECKPOINT_NODE" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("type_", [1, 2, 3, 4, 7, 8, 9, 10])
def test_every_node_type_of_the_schema_reads(traces, type_):
    """Each type the schema defines reads (a send or a receive, 5 and 6, needs its peer's
    fields, which the compute node this rewrites lacks); 0, INVALID_NODE, is refused since
    robust53 (tests/test_robust53.py)."""
    assert _read_typed(traces, type_) > 0


# ------------------------------------------------------------------ search's option lists

def _base(model: str):
    from trainsim.search.cli_inputs import build_base

    return build_base(model, "h100-sxm-80gb", 8, 32, 4096, 8, 400.0, "bf16")


def _space(base, **opts):
    from trainsim.search.cli_inputs import search_space

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        space = search_space(None, None, None, None, 1, "none", None, "search", base=base, **opts)
    return space, [str(w.message) for w in said if issubclass(w.category, TrainsimWarning)]


def test_ep_above_one_on_a_dense_model_is_dropped_with_a_note():
    """robust52: ``--ep 1,8`` on a dense model refused the whole list though ep 1 runs."""
    base = _base("llama3.2-1b")
    space, said = _space(base, ep_="1,8,8")
    assert space.ep == (1,)
    assert said == [("--ep=1,8,8: llama3.2-1b is dense (no model.num_experts), so only ep 1 "
                     "runs; 8 dropped")]
    space, said = _space(base, etp_="2,1")
    assert space.etp == (1,) and said and said[0].startswith("--etp=2,1: ")
    with pytest.raises(ConfigError, match="is dense .* needs a mixture-of-experts model"):
        _space(base, ep_="8,16")


def test_dualpipe_among_a_hybrid_models_schedules_is_dropped_with_a_note():
    """robust52: ``--schedules dualpipe,1f1b`` with a hybrid pattern refused the whole list
    though 1f1b runs; DualPipe alone is still refused."""
    base = _base("nemotron-h-8b")
    space, said = _space(base, schedules="dualpipe,1f1b,dualpipe_v")
    assert "dualpipe" not in (space.schedules or ()) and "dualpipe_v" not in space.schedules
    assert len(said) == 1 and said[0].startswith("--schedules=dualpipe,1f1b,dualpipe_v: "
                                                 "dualpipe, dualpipe_v dropped: "), said
    r = cli("search", "nemotron-h-8b", "--gpus", "8", "--global-batch", "32", "--seq", "4096",
            "--schedules", "dualpipe", "--tp", "1", "--pp", "2", "--recompute", "none",
            "--max-micro-batch", "1")
    assert r.exit_code == 2 and "dualpipe" in one_error_line(r), r.output


def test_search_runs_the_members_left_and_says_which_were_dropped():
    r = cli("search", "llama3.2-1b", "--gpus", "8", "--global-batch", "32", "--seq", "2048",
            "--ep", "1,8", "--tp", "1,2", "--pp", "1", "--recompute", "none",
            "--max-micro-batch", "1", "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["top"] and any("8 dropped" in w for w in out["warnings"]), out["warnings"]


# ------------------------------------------------------------------ cluster.node's no-preset word

@pytest.mark.parametrize("word", ["Custom", " CUSTOM ", "custom"])
def test_node_custom_reads_in_any_case_as_the_other_catalog_names(word):
    """A node preset is looked up in any case (``DGX-H100`` is dgx-h100); the resolved
    config's no-preset word ``custom`` now is too (robust52: ``Custom`` was "unknown node")."""
    from trainsim.catalog import run_config_from_dict

    cfg = _small()
    cfg["cluster"]["node"] = word
    plain = run_config_from_dict(_small())
    got = run_config_from_dict(cfg)
    assert got.cluster == plain.cluster and got.cluster.node == "custom"
