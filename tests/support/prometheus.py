"""A real Prometheus server for tests, from Debian's `prometheus` package.

The binary is taken from PATH when one runs there; otherwise the Debian package is fetched once
with `apt-get download` (no root needed: nothing is installed) and unpacked with `dpkg-deb -x`
into the project's download cache, beside the Kafka bundle (`ZKCONSUMER_CACHE_DIR`, else
~/.cache/zkconsumer). The tree is unpacked in a temporary folder and renamed into place whole,
under a file lock, so a run never sees half of it. The package's promtool, beside the binary,
checks and tests alerting rules (`promtool_or_skip`).

Like the Tansu broker, the server is started from a symlink inside the test work root, so its
command line names that folder and `scripts/test` can reap it after a crash.

Prometheus 2.42 applies its scrape targets on a fixed 5 s tick, so the first scrape comes about
5 s after the start whatever the scrape interval; `wait_for_targets_up` and `wait_for` wait that
out. HTTP goes through urllib only.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.servers import StartFailed, start_on_a_free_port
from support.waiting import wait_until
from zkconsumer.localcluster.bundle import default_cache_dir
from zkconsumer.localcluster.processes import log_tail, spawn, stop_process

PACKAGE = "prometheus"
CACHE_NAME = "prometheus-deb"  # the unpacked package, under the cache folder
BINARY_IN_PACKAGE = Path("usr/bin/prometheus")
DOWNLOAD_TIMEOUT_S = 600.0


class PrometheusUnavailable(Exception):
    """No runnable Prometheus can be had here (a reason to skip, not a failure)."""


def find_prometheus(cache_dir: Path | None = None) -> Path:
    """A Prometheus binary checked to run: from PATH, else the cached unpacked Debian package,
    else the package downloaded and unpacked into the cache now."""
    on_path = shutil.which("prometheus")
    if on_path and _runs(Path(on_path)) is None:
        return Path(on_path)
    cache = cache_dir or default_cache_dir()
    binary = cache / CACHE_NAME / BINARY_IN_PACKAGE
    if _runs(binary) is None:
        return binary
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / ".prometheus.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if _runs(binary) is not None:  # nobody unpacked it while we waited for the lock
                _download_and_unpack(cache, cache / CACHE_NAME)
    except OSError as exc:
        raise PrometheusUnavailable(f"cannot prepare the Prometheus cache in {cache}: "
                                    f"{exc.strerror or exc}") from None
    problem = _runs(binary)
    if problem is not None:
        raise PrometheusUnavailable(f"the unpacked {binary} does not run: {problem}")
    return binary


_found: dict[Path | None, Path | PrometheusUnavailable] = {}


def prometheus_binary_or_skip(cache_dir: Path | None = None) -> Path:
    """`find_prometheus` for fixtures: looked up once per process (a failed download is not
    tried again by every test) and a `pytest.skip` with the reason when there is none."""
    import pytest

    if cache_dir not in _found:
        try:
            _found[cache_dir] = find_prometheus(cache_dir)
        except PrometheusUnavailable as exc:
            _found[cache_dir] = exc
    found = _found[cache_dir]
    if isinstance(found, PrometheusUnavailable):
        pytest.skip(str(found))
    return found


def promtool_or_skip(cache_dir: Path | None = None) -> Path:
    """promtool, which the Debian package ships beside prometheus (usr/bin/promtool); a
    `pytest.skip` with the reason when there is none that runs."""
    import pytest

    prometheus = prometheus_binary_or_skip(cache_dir)
    for candidate in (prometheus.with_name("promtool"), shutil.which("promtool")):
        if candidate is not None and _runs(Path(candidate)) is None:
            return Path(candidate)
    pytest.skip(f"no runnable promtool beside {prometheus} nor on PATH")


def _runs(binary: Path) -> str | None:
    """None when `binary --version` succeeds, else one line saying why not."""
    if not binary.is_file():
        return f"{binary} does not exist"
    try:
        subprocess.run([str(binary), "--version"], check=True, capture_output=True, timeout=30)
    except subprocess.CalledProcessError as exc:
        return f"{binary} --version exited with {exc.returncode}: {_last_line(exc.stderr)}"
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot execute {binary}: {exc}"
    return None


def _download_and_unpack(cache: Path, target: Path) -> None:
    for tool in ("apt-get", "dpkg-deb"):
        if shutil.which(tool) is None:
            raise PrometheusUnavailable(f"no prometheus on PATH and no {tool} to fetch Debian's "
                                        f"`{PACKAGE}` package")
    with tempfile.TemporaryDirectory(dir=cache, prefix=".prometheus-") as work:
        work_dir = Path(work)
        _run(["apt-get", "download", "--quiet", PACKAGE], work_dir,
             f"apt-get download {PACKAGE}")
        debs = sorted(work_dir.glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise PrometheusUnavailable(f"apt-get download {PACKAGE} left no .deb file")
        staging = work_dir / "tree"
        _run(["dpkg-deb", "-x", str(debs[0]), str(staging)], work_dir, f"dpkg-deb -x {debs[0].name}")
        problem = _runs(staging / BINARY_IN_PACKAGE)
        if problem is not None:
            raise PrometheusUnavailable(f"{debs[0].name} holds no runnable prometheus: {problem}")
        if target.exists():  # a broken earlier tree (one that works was checked under the lock)
            shutil.rmtree(target)
        os.rename(staging, target)


def _run(command: list[str], cwd: Path, what: str) -> None:
    try:
        subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True,
                       timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        raise PrometheusUnavailable(f"{what} failed: {_last_line(exc.stderr)}") from None
    except (OSError, subprocess.SubprocessError) as exc:
        raise PrometheusUnavailable(f"{what} failed: {exc}") from None


def _last_line(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    lines = (output or "").strip().splitlines()
    return lines[-1].strip() if lines else "no output"


class PrometheusError(Exception):
    """The Prometheus HTTP API answered with an error."""


@dataclass
class PrometheusServer:
    """One running Prometheus on 127.0.0.1:port; its files are in `work_dir`, its output in
    `log`; `targets` are its scrape jobs (job name -> host:port)."""

    process: subprocess.Popen
    port: int
    work_dir: Path
    log: Path
    data: Path
    targets: Mapping[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited in time."""
        stop_process(self.process.pid, str(self.work_dir), timeout=15, child=self.process)

    def api(self, path: str, **params: str) -> Any:
        """The `data` of an HTTP API answer (`/api/v1/...`); PrometheusError when it failed."""
        url = f"{self.url}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = response.read()
        except urllib.error.HTTPError as error:  # bad queries answer 400 with a JSON error
            body = error.read()
            if not body.startswith(b"{"):
                raise PrometheusError(f"GET {path}: HTTP {error.code}") from None
        answer = json.loads(body)
        if answer.get("status") != "success":
            raise PrometheusError(f"GET {path} {params}: {answer.get('errorType')}: "
                                  f"{answer.get('error')}")
        return answer["data"]

    def query(self, promql: str) -> list[dict]:
        """An instant query: the vector's samples, each `{"metric": {labels}, "value": [time,
        "number"]}` (a scalar or string result comes as one sample with no labels)."""
        data = self.api("/api/v1/query", query=promql)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def wait_for(self, promql: str, predicate: Callable[[list[dict]], Any] = bool, *,
                 timeout: float = 30) -> list[dict]:
        """Query until `predicate` holds for the result (by default: until it is not empty);
        scrapes are periodic, so what a target serves shows up in Prometheus a little later."""
        kept: list[list[dict]] = []

        def holds() -> bool:
            kept[:] = [self.query(promql)]
            return bool(predicate(kept[0]))

        wait_until(holds, timeout=timeout, interval=0.1, message=f"`{promql}` in Prometheus")
        return kept[0]

    def wait_for_targets_up(self, timeout: float = 30) -> None:
        """Wait until every configured job has all its targets scraped successfully; on
        timeout an AssertionError names each target's health and last scrape error."""
        last: list[dict] = []

        def all_up() -> bool:
            if self.process.poll() is not None:
                raise _Exited(f"Prometheus exited with {self.process.returncode}: "
                              f"{log_tail(self.log)}")
            last[:] = self.api("/api/v1/targets", state="active")["activeTargets"]
            up = {target["labels"].get("job") for target in last if target["health"] == "up"}
            down = {target["labels"].get("job") for target in last if target["health"] != "up"}
            return set(self.targets) <= up and not down & set(self.targets)

        try:
            wait_until(all_up, timeout=timeout, interval=0.1, message="targets up")
        except _Exited as exc:
            raise AssertionError(str(exc)) from None
        except AssertionError:
            seen = "; ".join(
                f"{t['labels'].get('job')} {t['scrapeUrl']}: {t['health']}"
                + (f" ({t['lastError']})" if t.get("lastError") else "") for t in last)
            raise AssertionError(f"Prometheus targets not all up after {timeout:.0f}s: "
                                 f"{seen or 'no active targets'}") from None


def start_prometheus(work_dir: Path, binary: Path, targets: Mapping[str, str],
                     scrape_interval_s: float = 1, *, attempts: int = 3,
                     timeout: float = 60) -> PrometheusServer:
    """Start Prometheus scraping `targets` (job name -> "host:port", path /metrics) every
    `scrape_interval_s`, on a free loopback port, and wait until it is ready.

    Each start gets a folder of its own under `work_dir` (config, data, log), so several servers
    may share one work folder. The free port may be taken by someone else before Prometheus
    binds it; it then exits, and the start is retried on another port.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="prometheus-", dir=work_dir))
    link = run_dir / "prometheus"
    link.symlink_to(binary)
    config = run_dir / "prometheus.yml"
    config.write_text(_config(targets, scrape_interval_s))

    def launch(attempt: int, port: int) -> PrometheusServer:
        log, data = run_dir / f"prometheus-{attempt}.log", run_dir / f"data-{attempt}"
        process = spawn([str(link), f"--config.file={config}", f"--storage.tsdb.path={data}",
                         f"--web.listen-address=127.0.0.1:{port}", "--log.level=info"],
                        dict(os.environ), log)
        return PrometheusServer(process, port, run_dir, log, data, dict(targets))

    return start_on_a_free_port("Prometheus", launch, _ready, attempts=attempts,
                                timeout=timeout)


def _config(targets: Mapping[str, str], scrape_interval_s: float) -> str:
    """prometheus.yml with one job per target; strings are written as JSON, which YAML reads."""
    interval = f"{max(1, round(scrape_interval_s * 1000))}ms"
    lines = ["global:",
             f"  scrape_interval: {interval}",
             f"  scrape_timeout: {interval}",
             f"  evaluation_interval: {interval}",
             "scrape_configs:"]
    for job, address in targets.items():
        lines += [f"  - job_name: {json.dumps(job)}",
                  "    static_configs:",
                  f"      - targets: [{json.dumps(address)}]"]
    return "\n".join(lines) + "\n"


class _Exited(Exception):
    pass


def _ready(server: PrometheusServer) -> bool:
    """Alive and answering /-/ready, and the server answering is this one (its storage path
    tells it from anything else that might listen on a reused port)."""
    if server.process.poll() is not None:
        raise StartFailed()
    try:
        with urllib.request.urlopen(f"{server.url}/-/ready", timeout=2) as response:
            if response.status != 200:
                return False
        flags = server.api("/api/v1/status/flags")
    except (OSError, PrometheusError, ValueError):
        return False
    return flags.get("storage.tsdb.path") == str(server.data)
