"""``benchmarks/search_ceilings.py``'s replay: the answers a part gave its outermost callers
handed back in order (calls nested in another replayed part not recorded, a refusal raised
again), and a replay whose calls changed refused rather than timed."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _ceilings():
    spec = importlib.util.spec_from_file_location("search_ceilings", BENCH / "search_ceilings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CALLS: list[str] = []


class _Toy:
    def outer(self, x: int) -> int:  # asks inner: nested when both are replayed
        CALLS.append(f"outer{x}")
        return 10 * self.inner(x)

    def inner(self, x: int) -> int:
        CALLS.append(f"inner{x}")
        if x < 0:
            raise ValueError(f"refused {x}")
        return x + 1


def test_replay_hands_back_the_outermost_answers_in_order(monkeypatch):
    sc = _ceilings()
    sys.modules["_toy_parts"] = types.SimpleNamespace(_Toy=_Toy)
    monkeypatch.setattr(sc, "PARTS", {"outer": ("_toy_parts", "_Toy", "outer"),
                                      "inner": ("_toy_parts", "_Toy", "inner")})
    toy, asked = _Toy(), [3, 1, -2]

    def run() -> list:
        out = []
        for x in asked:
            try:
                out.append(toy.outer(x) if x != 1 else toy.inner(x))
            except ValueError as exc:
                out.append(str(exc))
        return out

    replay, recorded = sc._replaying(["outer", "inner"], run)
    assert recorded == [40, 2, "refused -2"]
    CALLS.clear()
    assert replay() == recorded and CALLS == []  # nothing worked out, the refusal again
    assert _Toy.outer is not None and toy.outer(5) == 60  # the methods restored
    asked.append(7)  # one call more than recorded: nothing left to hand back
    with pytest.raises(StopIteration):
        replay()
    asked[:] = [3]  # fewer calls: answers left over
    with pytest.raises(AssertionError, match="left over"):
        replay()
    del sys.modules["_toy_parts"]
