"""robust54: robust53's open edges (foreign Chakra traces that met the engine's cross-rank
"deadlock", an optional field's blank text at the Python API) and the thirty-fourth fuzz
round's classes (``benchmarks/fuzz54.py``)."""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import pytest

from trainsim.errors import ConfigError, TrainsimError

SMALL = {"model": {"hidden_size": 256, "num_layers": 4, "num_attention_heads": 4,
                   "vocab_size": 1024},
         "parallel": {"pp": 2}, "training": {"global_batch_size": 16, "seq_length": 512},
         "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8,
                     "compute_db": None}}


def _fuzz54():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fuzz54
    return fuzz54


# ------------------------------------------------------------ blank text in an optional field

@pytest.mark.parametrize("blank", ["", " ", "\t"])
@pytest.mark.parametrize("name", ["train_tokens", "framework", "framework_version",
                                  "local_batch_size", "data_read_bw_Bps", "vocab_divisible_by"])
def test_an_optional_training_field_reads_blank_text_as_none(name, blank):
    """robust53 lead 4: ``TrainingConfig(train_tokens="")`` was refused ("must be a finite
    number") and ``framework=""`` kept as '' while a file's empty value is None (``_coerce``);
    one rule now: an optional field's blank text is None at every entry point."""
    from trainsim.config import TrainingConfig

    t = TrainingConfig(global_batch_size=16, seq_length=512, **{name: blank})
    assert getattr(t, name) is None
    assert t == TrainingConfig(global_batch_size=16, seq_length=512)


@pytest.mark.parametrize("name", ["pipeline_schedule", "pipeline_model_parallel_layout",
                                  "dp_buckets", "recompute_num_layers", "zero3_gather"])
def test_an_optional_parallel_field_reads_blank_text_as_none(name):
    from trainsim.config import ParallelConfig

    assert getattr(ParallelConfig(**{name: " "}), name) is None


def test_a_required_field_still_refuses_blank_text():
    """Only optional fields: a count a run needs is no None."""
    from trainsim.config import TrainingConfig

    with pytest.raises(ConfigError, match=r"training.global_batch_size='' must be a whole"):
        TrainingConfig(global_batch_size="", seq_length=512)
    with pytest.raises(ConfigError, match="optimizer_dtype"):
        TrainingConfig(global_batch_size=16, seq_length=512, optimizer_dtype="")


def test_blank_text_at_the_api_builds_the_run_a_file_builds():
    """``dataclasses.replace`` of a built run with blank text equals a file's empty value."""
    from trainsim.catalog import run_config_from_dict

    rc = run_config_from_dict(copy.deepcopy(SMALL))
    cfg = copy.deepcopy(SMALL)
    cfg["parallel"]["pipeline_model_parallel_layout"] = ""
    cfg["model"]["hybrid_layer_pattern"] = ""
    from_file = run_config_from_dict(cfg)
    api = dataclasses.replace(rc, parallel=dataclasses.replace(
        rc.parallel, pipeline_model_parallel_layout=""), model=dataclasses.replace(
        rc.model, hybrid_layer_pattern=" "))
    assert api == from_file == rc


@pytest.mark.parametrize("blank", ["", " ", "\t"])
def test_a_files_blank_compute_db_is_none(blank):
    """A file's ``compute_db: ' '`` was "the kernel database file name is empty" while ''
    was None."""
    from trainsim.catalog import run_config_from_dict

    cfg = copy.deepcopy(SMALL)
    cfg["cluster"]["compute_db"] = blank
    assert run_config_from_dict(cfg).cluster.compute_db is None


def test_every_optional_field_reads_blank_text_as_none_at_the_api_and_in_a_file():
    """fuzz54's ``blankopt`` surface, whole (every optional scalar field of the four configs,
    three bases, three blanks): 447 of 450 inputs were a class on main 78e02712."""
    fuzz = _fuzz54()
    assert fuzz.main(["--only", "blankopt"]) == 0


# ------------------------------------------------------------ foreign Chakra traces

def _msg(i, name, kind, src, dst, tag, deps=(), us=10):
    from trainsim.interop.chakra_et import ETNode

    return ETNode(i, name, kind, data_deps=list(deps), duration_micros=us,
                  attrs={"comm_src": ("int64", src), "comm_dst": ("int64", dst),
                         "comm_tag": ("int64", tag)})


def test_a_foreign_trace_whose_send_waits_behind_another_reads(tmp_path):
    """robust53 lead 3: rank 0 lists a send that waits (through a receive) for rank 1, then a
    send rank 1 waits for; with no ``trainsim.stream`` both share rank 0's communication
    stream, in that order, and the engine said "deadlock: 6 tasks never ran". ASTRA-sim's
    feeder issues a node once its dependencies are done; the reader now submits the nodes in
    one order over every rank: S0b, R1, S1, R0, S0a, R1a, 10 us each."""
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import COMM_RECV_NODE, COMM_SEND_NODE, write_et

    write_et(tmp_path / "f.0.et", [_msg(1, "R0", COMM_RECV_NODE, 1, 0, 3),
                                   _msg(2, "S0a", COMM_SEND_NODE, 0, 1, 1, [1]),
                                   _msg(3, "S0b", COMM_SEND_NODE, 0, 1, 2)])
    write_et(tmp_path / "f.1.et", [_msg(1, "R1", COMM_RECV_NODE, 0, 1, 2),
                                   _msg(2, "S1", COMM_SEND_NODE, 1, 0, 3, [1]),
                                   _msg(3, "R1a", COMM_RECV_NODE, 0, 1, 1)])
    assert read_chakra(tmp_path / "f") == pytest.approx(60e-6, rel=1e-12)


def test_receives_match_sends_first_in_first_out_per_tag(tmp_path):
    """Two messages 0 -> 1 with tag 0 (a foreign trace may tag every message 0): the first
    receive is the first send's (as MPI and NCCL's point-to-point calls match them), not the
    last one's. Main matched both receives to the last send: 270 us, not 220 us (compute 100,
    send 10, receive 10, compute 100)."""
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import (
        COMM_RECV_NODE,
        COMM_SEND_NODE,
        COMP_NODE,
        ETNode,
        write_et,
    )

    write_et(tmp_path / "g.0.et", [ETNode(1, "C", COMP_NODE, duration_micros=100),
                                   _msg(2, "Sa", COMM_SEND_NODE, 0, 1, 0, [1]),
                                   _msg(3, "Sb", COMM_SEND_NODE, 0, 1, 0, [2], us=50)])
    write_et(tmp_path / "g.1.et", [_msg(1, "Ra", COMM_RECV_NODE, 0, 1, 0),
                                   ETNode(2, "C1", COMP_NODE, data_deps=[1], duration_micros=100),
                                   _msg(3, "Rb", COMM_RECV_NODE, 0, 1, 0)])
    assert read_chakra(tmp_path / "g") == pytest.approx(220e-6, rel=1e-12)


def test_ranks_that_wait_on_each_other_are_refused_naming_a_node(tmp_path):
    """Each rank receives before it sends what the other receives: no order runs it; one line
    naming the file and a node (main: "deadlock: 4 tasks never ran (first: R)")."""
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import COMM_RECV_NODE, COMM_SEND_NODE, write_et

    for r in (0, 1):
        write_et(tmp_path / f"h.{r}.et", [_msg(1, "R", COMM_RECV_NODE, 1 - r, r, 0),
                                          _msg(2, "S", COMM_SEND_NODE, r, 1 - r, 0, [1])])
    with pytest.raises(TrainsimError, match=r"h\.[01]\.et: node 1 \(R\) waits for itself "
                                            r"through other ranks' sends \(4 nodes never"):
        read_chakra(tmp_path / "h")


def test_a_receive_past_the_sends_of_its_tag_is_refused_naming_it(tmp_path):
    from trainsim.interop.chakra import read_chakra
    from trainsim.interop.chakra_et import COMM_RECV_NODE, COMM_SEND_NODE, write_et

    write_et(tmp_path / "k.0.et", [_msg(1, "S", COMM_SEND_NODE, 0, 1, 0)])
    write_et(tmp_path / "k.1.et", [_msg(1, "Ra", COMM_RECV_NODE, 0, 1, 0),
                                   _msg(2, "Rb", COMM_RECV_NODE, 0, 1, 0)])
    with pytest.raises(TrainsimError, match=r"k\.1\.et: receive node 2 \(Rb\) \(0, 1, 0\) .* "
                                            r"no matching send \(receive 2 of it; 1 sent\)"):
        read_chakra(tmp_path / "k")


def test_a_trace_trainsim_wrote_keeps_its_order(tmp_path):
    """The engine runs trainsim's own traces as listed (each reads back to its iteration):
    the reader's order over every rank is only for traces that would not run so."""
    from trainsim.catalog import run_config_from_dict
    from trainsim.engine import run
    from trainsim.interop.chakra import export_chakra
    from trainsim.interop.chakra_read import _runnable, _topological, tasks_from_chakra

    ex = export_chakra(run_config_from_dict(copy.deepcopy(SMALL)), tmp_path / "w")
    tasks = tasks_from_chakra(tmp_path / "w")
    assert len(_topological(tasks, chained=True)) == len(tasks)
    assert _runnable(tasks, []) is tasks
    assert run(tasks).makespan_s == pytest.approx(ex.iteration_time_s, rel=1e-9)


def test_random_foreign_traces_read_between_their_critical_path_and_their_sum():
    """fuzz54's ``foreign`` surface at 90 inputs (the whole: 3,600, -m slow); main 78e02712
    refused 662 of the first 1,800 (1,620 valid) traces as "deadlock", read 148 every-tag-0 traces
    otherwise than with a tag per message, and refused 156 cycles naming no file or node."""
    assert _fuzz54().main(["--only", "foreign", "--count", "90"]) == 0


# ------------------------------------------------------------ fuzz54: the round

def test_fuzz54_samples_find_no_class():
    """A seeded sample of the round's fast surfaces (the whole round: -m slow)."""
    assert _fuzz54().main(["--only", "usergpu,numtext,cliopts,flipbytes", "--count", "25"]) == 0


@pytest.mark.slow
def test_the_whole_fuzz54_round_finds_no_class():
    assert _fuzz54().main([]) == 0
