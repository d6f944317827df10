"""Helpers for tests and benchmarks of the service: a real server process on loopback, a
throwaway PostgreSQL server, and a small HTTP client. Only the standard library is used here,
so a test can run them against an installed trainsim."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base: str, method: str, path: str, token: str | None = None, body: Any = None,
         timeout_s: float = 30.0) -> tuple[int, Any]:
    """(status, parsed JSON or text) of one request to ``base`` (http://127.0.0.1:PORT)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def create_token(db_url: str, name: str = "test") -> str:
    out = subprocess.run([sys.executable, "-m", "trainsim.cli", "token", "create", name,
                          "--db", db_url], check=True, capture_output=True, text=True)
    return out.stdout.strip()


class ServerProcess:
    """``trainsim serve`` in a child process on a free loopback port."""

    def __init__(self, db_url: str, workers: int = 2, extra: tuple[str, ...] = ()) -> None:
        self.db_url, self.workers, self.extra = db_url, workers, extra
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - kept open for the serverprefix="trainsim-serve-", suffix=".log",
                                               delete=False)

    def start(self, timeout_s: float = 60.0) -> ServerProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "trainsim.cli", "serve", "--port", str(self.port),
             "--db", self.db_url, "--workers", str(self.workers), *self.extra],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"trainsim serve exited: {self.output()[-2000:]}")
            try:
                if call(self.base, "GET", "/api/v1/health", timeout_s=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"trainsim serve did not answer in {timeout_s} s")

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def children(self) -> list[int]:
        """Pids of the server's child processes (workers, checkers), from /proc (Linux)."""
        if self.proc is None:
            return []
        out = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if int(fields[1]) == self.proc.pid:
                out.append(int(stat.parent.name))
        return out

    def kill(self) -> None:
        """SIGKILL the server process alone (its workers notice and leave)."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


@contextmanager
def server(db_url: str, workers: int = 2, extra: tuple[str, ...] = ()) -> Iterator[ServerProcess]:
    s = ServerProcess(db_url, workers, extra).start()
    try:
        yield s
    finally:
        s.stop()


def postgres_binaries() -> Path | None:
    """The directory of Debian's PostgreSQL server binaries (initdb, pg_ctl), if installed."""
    for found in (shutil.which("pg_ctl"),):
        if found:
            return Path(found).resolve().parent
    roots = sorted(Path("/usr/lib/postgresql").glob("*/bin")) if Path("/usr/lib/postgresql").is_dir() else []
    return roots[-1] if roots else None


@contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server on a loopback port; yields its SQLAlchemy URL.

    Raises RuntimeError with the reason when it cannot start (no binaries, no driver, no
    unprivileged user to run it as root)."""
    bindir = postgres_binaries()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("no psycopg driver (pip install 'psycopg[binary]')") from exc
    as_user: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="trainsim-pg-"))
    if os.geteuid() == 0:  # postgres refuses to run as root: run it as the postgres user
        import pwd

        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root and no 'postgres' user to run the server as")
        os.chown(tmp, pw.pw_uid, pw.pw_gid)
        runuser = shutil.which("runuser") or shutil.which("su")
        if runuser is None:
            raise RuntimeError("running as root and no runuser to drop privileges")
        as_user = [runuser, "-u", "postgres", "--"]
    port = free_port()
    data = tmp / "data"
    env = {**os.environ, "LC_ALL": "C"}
    try:
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                        "-U", "trainsim", "-E", "UTF8", "--no-sync"], check=True,
                       capture_output=True, env=env)
        server_opts = f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l",
                        str(tmp / "log"), "-o", server_opts, "start"], check=True,
                       capture_output=True, env=env)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {exc.stderr.decode()[-500:]}") from None
    try:
        yield f"postgresql://trainsim@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "stop"], capture_output=True, env=env, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def postgres_or_skip(what: str) -> Iterator[str]:
    """For a pytest fixture (``yield from``): the URL of a throwaway PostgreSQL server, stopped
    afterwards, or a skip of ``what`` saying why none could start."""
    import pytest

    try:
        cm = postgres_server()
        url = cm.__enter__()
    except RuntimeError as exc:
        pytest.skip(f"{what} skipped: {exc}")
    try:
        yield url
    finally:
        cm.__exit__(None, None, None)
