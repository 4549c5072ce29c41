"""Server settings: one dataclass, filled from the command line and the environment.

Every field can be given as `--flag` or as the environment variable `PLAYGROUND_<FIELD>`
(`PLAYGROUND_PORT=9000`); the flag wins. Tests build `Settings(...)` directly with tmp folders.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

# The project root is the parent of server/; static folders and the default data dir live under it.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

DEVICES = ("auto", "cuda", "cpu")
DB_NAME = "playground.sqlite3"  # in the data dir
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def machine_memory_mb() -> float:
    """This machine's memory in MB, as a job here can have it: the physical memory, or the
    container's limit (cgroup v2 memory.max, v1 memory.limit_in_bytes) when that is lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total / 2**20


JOB_MEMORY_SHARE = 0.5  # of the machine's memory, a job's default limit: the server, the page's
                        # browser and the system keep the rest (a fixed 16 GB was 2/3 of a 24 GB host)


def default_job_memory_mb() -> float:
    return float(int(machine_memory_mb() * JOB_MEMORY_SHARE))


@dataclass
class Settings:
    host: str = "127.0.0.1"  # loopback: no token needed, nothing else on the network can reach it
    port: int = 8000
    data_dir: Path = PROJECT_ROOT / "data"  # holds playground.sqlite3 and uploads/
    max_upload_mb: int = 200  # a CSV or text file; larger belongs on disk, not in a browser tab
    max_json_kb: int = 1024  # a run (config, metrics, loss curve) is a few KB; 1 MB leaves room
    device: str = "auto"  # auto: CUDA when PyTorch sees a GPU, else the CPU
    token: str | None = None  # required (and generated when missing) off loopback, as Jupyter does
    comparisons: str = "on"  # "off": posted runs queue no server-side comparison jobs
    comparison_workers: int = 1  # worker processes; one job may use every core or the whole GPU
    comparison_runners: str = ""  # comma-separated runners to run (empty: all); others "turned off"
    # Comparison jobs on Dask (server/comparisons.py): None starts an embedded LocalCluster of
    # comparison_workers processes; "tcp://host:8786" uses that scheduler and its workers.
    cluster: str | None = None
    job_timeout_s: float = 1800.0  # a job's wall clock, enforced in the worker; then failed
    # A job's resident memory, enforced in the worker; 0: none. Default: half this machine's.
    job_memory_mb: float = field(default_factory=default_job_memory_mb)
    job_retries: int = 2  # runs again after its worker died, at most this often
    # ONNX exports (server/exports.py) a client waits for: built this many at once (fewer where
    # the machine's memory holds fewer jobs of job_memory_mb), this many more waiting, then 503;
    # each one within export_timeout_s (and job_timeout_s).
    export_workers: int = 2
    export_queue: int = 8
    export_timeout_s: float = 300.0
    client_queue_limit: int = 50  # jobs queued or running for one client address: then 429
    queue_limit: int = 1000  # jobs queued or running in all: then 429
    # Caps on a job's size, checked before it is queued (server/jobcost.py); 0 turns one off.
    max_forest_cost: float = 1e10  # rows x trees x depth
    max_trees: int = 5000
    max_boosting_cost: float = 2e11  # rows x features x depth and each node's work, x trees
    max_table_cells: float = 1e8  # rows x columns of a generated data set
    max_transformer_cost: float = 2e15  # parameters x tokens a step x steps
    # Memory of the process that summarises one uploaded CSV (server/describe_worker.py).
    max_parse_mb: int = 4096
    # Stored runs: past either cap, each new run retires the oldest (0 < cap).
    max_runs: int = 10_000
    max_runs_mb: int = 1024  # bytes of stored run bodies (a run is at most max_json_kb)
    # Connections: a request's headers must arrive within header_timeout_s of the connection (or
    # of the previous response); its body may pause at most body_timeout_s between two reads (and
    # must average 4 KB/s past that: server/connections.py); an answer the client does not read
    # may stall at most write_timeout_s.
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    write_timeout_s: float = 30.0
    # Open connections at once; also kept below the open-file limit (see server/connections.py).
    # Past it, the connection idle longest (waiting for a request, a body, or its client to read)
    # is closed.
    max_connections: int = 1000
    # The secret that lets the benchmark harness open `/?suite=NAME` without a click; generated
    # at start when not given (written to <data_dir>/suite.key, readable by this user only).
    suite_key: str | None = None
    # Static roots, configurable so tests can serve a tmp tree.
    web_dir: Path = PROJECT_ROOT / "web"  # index.html, ES modules, CSS
    pyodide_dir: Path = PROJECT_ROOT / "web" / "node_modules" / "pyodide"  # npm package `pyodide`
    wheels_dir: Path = PROJECT_ROOT / "web" / "build"  # the py_core wheel the page loads
    # Host names accepted without a token: blocks DNS rebinding of a loopback server by a web page.
    loopback_hosts: tuple[str, ...] = field(default=LOOPBACK_NAMES)

    def __post_init__(self) -> None:
        if self.comparisons not in ("on", "off"):
            raise ValueError(f"comparisons must be 'on' or 'off', not {self.comparisons!r}")
        if self.comparison_workers < 1:
            raise ValueError("comparison_workers must be at least 1")
        if self.cluster is not None and not re.fullmatch(r"(tcp|tls|ucx|inproc)://\S+", self.cluster):
            raise ValueError(f"cluster must be a scheduler address like tcp://host:8786, "
                             f"not {self.cluster!r}")
        if self.export_workers < 1 or self.export_queue < 0:
            raise ValueError("export_workers must be at least 1 and export_queue at least 0")
        for name in ("job_timeout_s", "job_memory_mb", "job_retries", "export_timeout_s",
                     "client_queue_limit", "queue_limit", "max_forest_cost", "max_trees",
                     "max_boosting_cost", "max_table_cells", "max_transformer_cost"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be a number >= 0 (0: no limit)")
        self.data_dir = Path(self.data_dir)
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, not {self.device!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in 0..65535, not {self.port}")
        if self.token is not None and not re.fullmatch(r"[A-Za-z0-9._~-]+", self.token):
            # It travels in a URL and a cookie: keep to characters neither needs to escape.
            raise ValueError("token may hold only letters, digits and . _ ~ -")
        if self.max_json_kb < 1 or self.max_upload_mb < 1:
            raise ValueError("size limits must be at least 1")
        if self.max_parse_mb < 64:
            raise ValueError("max_parse_mb must be at least 64")
        if self.max_runs < 1 or self.max_runs_mb < 1:
            raise ValueError("max_runs and max_runs_mb must be at least 1")
        if self.max_connections < 8:
            raise ValueError("max_connections must be at least 8")
        if not (self.header_timeout_s > 0 and self.body_timeout_s > 0 and self.write_timeout_s > 0):
            raise ValueError("timeouts must be positive")
        if self.suite_key is not None and not re.fullmatch(r"[A-Za-z0-9._~-]{16,128}", self.suite_key):
            raise ValueError("suite_key must be 16 to 128 letters, digits or . _ ~ -")

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_NAME

    @property
    def uploads_dir(self) -> Path:
        return self.data_dir / "uploads"

    @property
    def max_json_bytes(self) -> int:
        return self.max_json_kb * 1024

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(self.host)

    @property
    def requires_token(self) -> bool:
        # Off loopback anyone on the network could post runs or read them: require the token.
        # On loopback a token given explicitly is still enforced (the user asked for it).
        return bool(self.token) or not self.is_loopback


def is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _env(name: str, default):
    return os.environ.get(f"PLAYGROUND_{name.upper()}", default)


def parse_args(argv: list[str] | None = None) -> Settings:
    """Settings from flags, falling back to PLAYGROUND_* environment variables, then defaults."""
    d = Settings()
    p = argparse.ArgumentParser(prog="playground", description="Serve the WebGPU ML playground.")
    p.add_argument("--host", default=_env("host", d.host), help="address to bind (default %(default)s)")
    p.add_argument("--port", type=int, default=int(_env("port", d.port)), help="(default %(default)s)")
    p.add_argument("--data-dir", type=Path, default=Path(_env("data_dir", d.data_dir)),
                   help="SQLite database and uploads (default %(default)s)")
    p.add_argument("--max-upload-mb", type=int, default=int(_env("max_upload_mb", d.max_upload_mb)),
                   help="largest CSV or text upload, in MB; larger gets 413 (default %(default)s)")
    p.add_argument("--max-json-kb", type=int, default=int(_env("max_json_kb", d.max_json_kb)),
                   help="largest JSON body (a run), in KB; larger gets 413 (default %(default)s)")
    p.add_argument("--device", choices=DEVICES, default=_env("device", d.device),
                   help="where server-side comparison jobs run (default %(default)s)")
    p.add_argument("--token", default=_env("token", None),
                   help="access token; generated when binding off loopback without one")
    p.add_argument("--comparisons", choices=("on", "off"), default=_env("comparisons", d.comparisons),
                   help="run each posted run's job again on the server's runners (default %(default)s)")
    p.add_argument("--comparison-workers", type=int,
                   default=int(_env("comparison_workers", d.comparison_workers)),
                   help="worker processes for comparison jobs (default %(default)s)")
    p.add_argument("--comparison-runners", default=_env("comparison_runners", d.comparison_runners),
                   help="comma-separated runner names (server/runners), e.g. sklearn,xgboost,"
                        "lightgbm,cuml,py_core-native,py_core-reference,torch (default: all)")
    p.add_argument("--max-parse-mb", type=int, default=int(_env("max_parse_mb", d.max_parse_mb)),
                   help="most memory, in MB, for summarising one uploaded CSV (in its own process; "
                        "past it 413) (default %(default)s)")
    p.add_argument("--max-runs", type=int, default=int(_env("max_runs", d.max_runs)),
                   help="most runs kept; each new run past it retires the oldest (default %(default)s)")
    p.add_argument("--max-runs-mb", type=int, default=int(_env("max_runs_mb", d.max_runs_mb)),
                   help="most MB of stored runs kept, the oldest retired past it (default %(default)s)")
    p.add_argument("--header-timeout", type=float, default=float(_env("header_timeout_s", d.header_timeout_s)),
                   help="seconds a client has to send a request's headers (default %(default)s)")
    p.add_argument("--body-timeout", type=float, default=float(_env("body_timeout_s", d.body_timeout_s)),
                   help="seconds a request body may pause between reads; past them it must "
                        "average 4 KB/s (default %(default)s)")
    p.add_argument("--write-timeout", type=float, default=float(_env("write_timeout_s", d.write_timeout_s)),
                   help="seconds an answer may wait on a client that does not read it (default "
                        "%(default)s)")
    p.add_argument("--max-connections", type=int, default=int(_env("max_connections", d.max_connections)),
                   help="most open connections at once, kept below the open-file limit (default %(default)s)")
    p.add_argument("--suite-key", default=_env("suite_key", None),
                   help="secret that lets /?suite= start without a click (default: generated, "
                        "in <data-dir>/suite.key)")
    p.add_argument("--export-workers", type=int, default=int(_env("export_workers", d.export_workers)),
                   help="ONNX exports built at once, fewer where memory holds fewer jobs of "
                        "--job-memory-mb (default %(default)s)")
    p.add_argument("--export-queue", type=int, default=int(_env("export_queue", d.export_queue)),
                   help="ONNX exports waiting for a worker; past them 503 (default %(default)s)")
    p.add_argument("--cluster", default=_env("cluster", None),
                   help="Dask scheduler for comparison jobs, e.g. tcp://host:8786 (default: an "
                        "embedded LocalCluster of --comparison-workers processes)")
    limits = (("job_timeout_s", float, "--job-timeout", "a job's wall-clock limit, seconds"),
              ("job_memory_mb", float, "--job-memory-mb",
               "a job's memory limit, MB (by default half this machine's memory)"),
              ("job_retries", int, "--job-retries", "runs of a job again after its worker died"),
              ("export_timeout_s", float, "--export-timeout", "an ONNX export's time limit, seconds"),
              ("client_queue_limit", int, "--client-queue-limit",
               "jobs queued or running for one client before 429"),
              ("queue_limit", int, "--queue-limit", "jobs queued or running in all before 429"),
              ("max_forest_cost", float, "--max-forest-cost", "most rows x trees x depth of a forest job"),
              ("max_trees", int, "--max-trees", "most n_estimators of a forest job"),
              ("max_boosting_cost", float, "--max-boosting-cost",
               "most rows x features x depth and each node's work, x trees, of a gradient boosting job"),
              ("max_table_cells", float, "--max-table-cells", "most cells of a generated data set"),
              ("max_transformer_cost", float, "--max-transformer-cost",
               "most parameters x tokens x steps of a transformer job"))
    for name, kind, flag, what in limits:
        p.add_argument(flag, dest=name, type=kind, default=kind(_env(name, getattr(d, name))),
                       help=f"{what}; 0: none (default %(default)s)")
    a = p.parse_args(argv)
    try:
        return Settings(host=a.host, port=a.port, data_dir=a.data_dir, max_upload_mb=a.max_upload_mb,
                        max_json_kb=a.max_json_kb, device=a.device, token=a.token or None,
                        comparisons=a.comparisons, comparison_workers=a.comparison_workers,
                        comparison_runners=a.comparison_runners, max_runs=a.max_runs, max_parse_mb=a.max_parse_mb,
                        max_runs_mb=a.max_runs_mb, header_timeout_s=a.header_timeout,
                        body_timeout_s=a.body_timeout, write_timeout_s=a.write_timeout,
                        max_connections=a.max_connections,
                        suite_key=a.suite_key or None,
                        cluster=a.cluster or None, export_workers=a.export_workers,
                        export_queue=a.export_queue,
                        **{name: getattr(a, name) for name, *_ in limits})
    except ValueError as exc:
        p.error(str(exc))


def resolve_device(choice: str) -> str:
    """'auto' becomes 'cuda' when PyTorch is installed and sees a GPU, else 'cpu'.

    'cuda' without a usable GPU fails loudly at start-up rather than failing every job later.
    """
    if choice == "cpu":
        return "cpu"
    try:
        import torch  # optional: only the cuda runners need it; slow to import, hence lazily
        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if choice == "cuda" and not has_cuda:
        raise RuntimeError("--device cuda was asked for, but PyTorch sees no CUDA GPU")
    return "cuda" if has_cuda else "cpu"
