"""speed49: CPU spent pricing the embedding backward's id repeats (``workload.token_ids.
text_segments``, hits and misses of its cache) over a serial ``validate`` of a file, beside the
run's whole CPU. Run it on two trees alternately (PYTHONPATH=OLD/src, then NEW/src) to pair them.

    PYTHONPATH=src python benchmarks/speed49_segments.py [FILE]
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time


def main(argv: list[str]) -> None:
    path = argv[0] if argv else "../shared/validation/training_public.csv"
    from trainsim.workload import head, token_ids

    spent = [0.0, 0]
    inner = token_ids.text_segments

    def timed(*args: int) -> tuple[float, float, float, float]:
        t0 = time.process_time()
        got = inner(*args)
        spent[0] += time.process_time() - t0
        spent[1] += 1
        return got

    head.text_segments = timed  # the one caller (workload.head.embedding_scatter)
    from trainsim import cli

    sys.argv = ["trainsim", "validate", path, "--workers", "1", "--format", "json"]
    t0 = time.process_time()
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        cli.main()
    print(f"{os.environ.get('PYTHONPATH', '')}: run CPU {time.process_time() - t0:.2f} s, "
          f"text_segments {spent[0]:.3f} s over {spent[1]} calls "
          f"({inner.cache_info().misses} misses)")


if __name__ == "__main__":
    main(sys.argv[1:])
