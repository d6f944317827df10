"""What a process pays in ``engine.loop.runs_shared`` while a service app serves in it (the app's
startup ``gc.freeze``, ~97,000 objects): the median enter+exit of an empty ``runs_shared``, and
the CPU time of validating a training file then and with nothing frozen (after a warm-up
validation) (24th session, freeze).

    PYTHONPATH=src python benchmarks/frozen_collector_timing.py /work/shared/validation/training_public.csv
"""
from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
import warnings


def main(path: str) -> None:
    warnings.filterwarnings("ignore")
    from fastapi.testclient import TestClient

    from trainsim.engine import loop
    from trainsim.service import Settings, create_app
    from trainsim.validate import validate_file

    validate_file(path)  # warm (imports, kernel database, caches): the figures below are not
    db = f"sqlite:///{tempfile.mkdtemp()}/jobs.db"
    app = create_app(Settings(db_url=db, workers=0, checkers=0), start_workers=False)
    with TestClient(app):
        print(f"frozen objects while serving: {gc.get_freeze_count():,}")
        took = []
        for _ in range(30):
            t0 = time.perf_counter()
            with loop.runs_shared():
                pass
            took.append(time.perf_counter() - t0)
        print(f"runs_shared enter+exit while serving: median {statistics.median(took) * 1e3:.3f} ms")
        c0 = time.process_time()
        _, rows = validate_file(path)
        print(f"validate ({len(rows)} rows) while serving: {time.process_time() - c0:.2f} CPU-s")
    print(f"frozen objects after the client's exit: {gc.get_freeze_count():,}")
    c0 = time.process_time()
    validate_file(path)
    print(f"validate with nothing frozen: {time.process_time() - c0:.2f} CPU-s")


if __name__ == "__main__":
    main(sys.argv[1])
