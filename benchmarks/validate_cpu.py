"""CPU seconds of one validation file predicted serially in this process (issue 21 item 3):
``validate_file`` timed by ``time.process_time`` (less sensitive than the wall time to other
jobs on a shared machine; alternate runs of two trees to compare them).

    PYTHONPATH=src python benchmarks/validate_cpu.py [FILE]   # default: the public training file
"""

from __future__ import annotations

import sys
import time
import warnings


def main() -> int:
    from trainsim.validate import validate_file

    path = sys.argv[1] if len(sys.argv) > 1 else "../shared/validation/training_public.csv"
    warnings.simplefilter("ignore")
    t0, c0 = time.perf_counter(), time.process_time()
    _, res = validate_file(path)
    print(f"cpu {time.process_time() - c0:.2f} s wall {time.perf_counter() - t0:.2f} s "
          f"rows {len(res)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
