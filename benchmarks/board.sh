#!/bin/bash
# The scoreboard in one go: the public file (table and JSON, MAPE per framework to 3 decimals),
# the held-out file, errata applied, every benchmarks/training_*.csv check file and the
# framework-blind score of the public and held-out files (blind.txt).
# usage, from the repository root: bash benchmarks/board.sh OUTDIR   (1-5 min on 2 idle cores)
set -u
out=${1:?outdir}; mkdir -p "$out"
V="python -m trainsim validate"
export PYTHONPATH=src:benchmarks
$V ../shared/validation/training_public.csv --format json > "$out/public.json" 2>/dev/null
$V ../shared/validation/training_public.csv > "$out/public.txt" 2>&1
$V benchmarks/training_heldout.csv > "$out/heldout.txt" 2>&1
python benchmarks/errata.py > "$out/errata.txt" 2>&1
# every row's framework renamed to one with no profile (benchmarks/blind.py; ~20 s)
python benchmarks/blind.py --files public heldout --summary > "$out/blind.txt" 2>&1
: > "$out/checks.txt"
for f in benchmarks/training_*.csv; do
  case $f in *heldout*|*errata*) continue;; esac
  echo "$(basename $f .csv): $($V $f 2>&1 | tail -1)" >> "$out/checks.txt"
done
python - "$out" <<'PY'
import json, csv, sys, collections
out = sys.argv[1]
rows = json.load(open(f"{out}/public.json"))
if isinstance(rows, dict):
    rows = rows.get("rows", rows)
fw = {r["id"]: r["framework"] for r in csv.DictReader(open("../shared/validation/training_public.csv"))}
acc = collections.defaultdict(list)
for r in rows:
    if r.get("ape") is None: continue
    acc[fw.get(r["id"], "?")].append(r)
lines = []
for k in sorted(acc):
    v = acc[k]
    lines.append(f"{k:20s} n={len(v):3d} MAPE {100*sum(x['ape'] for x in v)/len(v):.3f}")
open(f"{out}/frameworks.txt", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
tail -1 "$out/public.txt"; tail -1 "$out/heldout.txt"; tail -3 "$out/errata.txt"; cat "$out/checks.txt"
sed 's/^/blind /' "$out/blind.txt"
