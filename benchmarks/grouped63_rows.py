"""Put the grouped weight-gradient rows of ``h200_2026-11-29_s63/attn_moe/kernels.csv`` into the
kernels format's grouped convention (63rd session).

    python benchmarks/grouped63_rows.py          # rewrite those rows in place
    python benchmarks/grouped63_rows.py --check  # exit 1 if a row is not as a rewrite gives it

``device_checks54.py``'s ``grouped_wgrad`` section (until the 63rd session) wrote each weight
gradient as ``m`` = k (the output's rows), ``n``, ``k`` = groups x r (the summed rows), with
``groups``: read by the format (shared validation/README.md, "grouped: m is the total rows over
``groups`` equal groups") that is ``groups`` GEMMs of k / groups rows over all the summed rows
(an 8-group Qwen3-30B-A3B fc1 gradient, 8 GEMMs of 2048 x 1536 over 512 rows each, was priced as
8 GEMMs of 256 x 1536 over 4,096 rows: the same FLOPs in a different grid of tiles). The
rewrite gives each expert's gradient as the per-group GEMM it is, C[k x n] = x_g^T[k x r]
dy_g[r x n]: ``m`` = groups x k, ``n``, ``k`` = r, as ``kernels_h200_grouped54.py`` wrote the
54th session's rows and as ``workload.layers`` builds an expert's weight-gradient GEMM. The
timings are checked against ``device_checks54.json`` (``grouped_wgrad`` ``wgrad_us``); the
measured rate (TFLOP/s over the same FLOPs) is unchanged.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "h200_2026-11-29_s63" / "attn_moe"
OLD_TAIL = "; m, n, k here are the output's k x n and the summed rows"


def _case(rid: str) -> str:
    """'dc54-h200-qwen3-30b-a3b-fc1-g8-r512-wgrad' -> 'qwen3-30b-a3b-fc1-g8-r512'."""
    return rid.removeprefix("dc54-h200-").removesuffix("-wgrad")


def fixed(row: dict[str, str], cases: dict[str, dict]) -> dict[str, str]:
    """``row`` in the grouped convention (a row already in it comes back unchanged)."""
    if not row["id"].endswith("-wgrad") or row["kind"] != "gemm_grouped":
        return row
    case = cases[_case(row["id"])]
    g = int(row["groups"])
    r = int(_case(row["id"]).rsplit("-r", 1)[1])
    out = dict(row)
    if row["note"].endswith(OLD_TAIL):
        k_out, n, summed = int(row["m"]), int(row["n"]), int(row["k"])
        if summed != g * r:
            raise ValueError(f"{row['id']}: k={summed} is not groups x rows = {g * r}")
        out.update(m=str(g * k_out), k=str(r),
                   note=row["note"].removesuffix(OLD_TAIL)
                   + f"; {g} GEMMs of {k_out} x {n} over {r} rows each (m = groups x {k_out})")
    m, n, k = int(out["m"]), int(out["n"]), int(out["k"])
    seconds = 2.0 * m * n * k / (float(out["measured_value"]) * 1e12)
    if abs(seconds * 1e6 / case["wgrad_us"] - 1.0) > 2e-3:
        raise ValueError(f"{row['id']}: {seconds * 1e6:.2f} us, the json {case['wgrad_us']} us")
    return out


def render(folder: Path = FOLDER) -> tuple[str, str]:
    """(the file as it is, as the rewrite gives it)."""
    text = (folder / "kernels.csv").read_bytes().decode()
    cases = json.loads((folder / "device_checks54.json").read_text())["sections"]["grouped_wgrad"]["cases"]
    reader = csv.DictReader(io.StringIO(text))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(reader.fieldnames or ()),
                       lineterminator="\r\n" if "\r\n" in text else "\n")
    w.writeheader()
    w.writerows(fixed(r, cases) for r in reader)
    return text, buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed CSV")
    args = ap.parse_args(argv)
    now, new = render()
    if args.check:
        if now != new:
            print("attn_moe/kernels.csv: weight-gradient rows not in the grouped convention",
                  file=sys.stderr)
            return 1
        return 0
    (FOLDER / "kernels.csv").write_bytes(new.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
