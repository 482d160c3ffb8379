"""Segue's performance benchmark: one command, every figure beside its floor and its target.

    python -m bench.run [--sessions-per-runtime N] [--seed S] [--big-mb 200] [--huge-gb 2] [--quick]

Generates the synthetic corpus into a cache dir under /tmp (once per parameter set), then measures, each as
the median of `--runs` (≥ 5) runs: `segue --help`; `segue list --json` cold (no Segue cache), disk-cold,
warm, and after 1 % of the sessions changed; `segue brief` of the big Claude Code and Codex sessions and of a
huge one; the language server's start to first answer and warm `segue/listSessions`; the floors (head+tail
read of every session file; one read+parse pass of the big file). It checks that every generated session
and its first request were listed, then writes bench/out/results.json and bench/out/results.md.
See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import generate, mutate
from bench.check import check
from bench.gen import tooljson
from bench.lsp_client import Client, LspError
from bench.proc import Run, Spawner, cold_method, evict, median
from bench.report import Figure, write_reports
from segue.stores import RUNTIMES

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable  # the interpreter running the bench (any venv): never a path inside the checkout
MB = 1e6
LIST_PARAMS = {"include_subagents": True, "limit": 1000}  # what the extension's session tree asks for


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Bench:
    def __init__(self, a: argparse.Namespace) -> None:
        self.a = a
        # started first, while this process is small (see bench.proc)
        self.spawner = Spawner(PYTHON, str(REPO), f"{a.cache_dir}/spawn-{os.getpid()}")
        self.runs = a.runs
        self.cache = Path(a.cache_dir)
        self.cache.mkdir(parents=True, exist_ok=True)
        self.corpus = generate.ensure(self.cache, a.sessions_per_runtime, a.seed, a.big_mb, a.big_count, log=log)
        self.expected = json.loads((self.corpus / "expected.json").read_text())
        self.home = self.corpus / "home"
        self.files_txt = self.corpus / "files.txt"
        self.state = self.cache / f"state-{self.corpus.name}"
        self.python = PYTHON
        self.pycache = str(Path(a.cache_dir).absolute() / "pycache")
        self.figures: list[Figure] = []
        self.floors: dict[str, Figure] = {}
        self.info: dict[str, Any] = {}
        self.tops = sum(1 for s in self.expected["sessions"] if not s["parent_id"])
        self.cold = cold_method(a.cold)

    def run(self, argv: list[str], env: dict[str, str], *, keep_stdout: bool = True) -> Run:
        return self.spawner.run(argv, env, cwd=str(REPO), keep_stdout=keep_stdout)

    # -- environment
    def env(self, home: Path | None = None, state: Path | None = None) -> dict[str, str]:
        """Only what Segue needs: no variable that relocates a runtime's store leaks in from this shell."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home or self.home),
                "SEGUE_HOME": str(state or self.state), "LANG": "C.UTF-8", "TZ": "UTC",
                # this checkout's Segue (server/) and bench; bytecode kept outside the checkout
                "PYTHONPATH": f"{REPO / 'server'}{os.pathsep}{REPO}", "PYTHONPYCACHEPREFIX": self.pycache}

    def reset_state(self, state: Path | None = None) -> None:
        shutil.rmtree(state or self.state, ignore_errors=True)

    # -- measuring
    def measure(self, key: str, label: str, argv: list[str], *, env: dict[str, str] | None = None,
                before: Callable[[int], None] | None = None, after: Callable[[int], None] | None = None,
                verify: Callable[[Run], str | None] | None = None, runs: int | None = None,
                keep_stdout: bool = True) -> Figure:
        results: list[Run] = []
        notes: list[str] = []
        for i in range(runs or self.runs):
            if before:
                before(i)
            r = self.run(argv, env or self.env(), keep_stdout=keep_stdout)
            if after:
                after(i)
            if r.rc != 0:
                notes.append(f"run {i}: exit {r.rc}: {r.stderr.strip()[-300:]}")
            elif verify:
                msg = verify(r)
                if msg:
                    notes.append(f"run {i}: {msg}")
            results.append(r)
        fig = Figure.from_runs(key, label, results, notes)
        procs = fig.processes()
        log(f"{label}: {fig.wall:.3f} s median (cpu {fig.cpu:.3f} s, {fig.rss_mb:.1f} MB"
            + (f": {procs}" if procs else "") + ")" + (f"  !! {notes[0]}" if notes else ""))
        return fig

    def verify_list(self, r: Run) -> str | None:
        try:
            n = len(json.loads(r.stdout))
        except ValueError as e:
            return f"stdout is not JSON ({e})"
        self.info.setdefault("listed_top_level", n)
        return None if n == self.tops else f"listed {n} top-level sessions, generated {self.tops}"

    # -- phases
    def help(self) -> None:
        self.figures.append(self.measure("help", "segue --help", [self.python, "-m", "segue", "--help"]))

    def floors_list(self) -> None:
        ht = [self.python, "-m", "bench.floor", "headtail", str(self.files_txt), "16384"]
        self.run(ht, self.env())  # fill the page cache
        self.floors["headtail"] = self.measure("floor_headtail", "floor: head+tail 16 KiB of every session file",
                                               ht)

    def list_cold(self) -> None:
        argv = [self.python, "-m", "segue", "list", "--json"]
        empty = self.cache / "empty-home"
        empty.mkdir(exist_ok=True)
        base = self.measure("list_empty", "segue list --json, empty HOME (import and start-up baseline)", argv,
                            env=self.env(empty, self.cache / "state-empty"),
                            before=lambda i: self.reset_state(self.cache / "state-empty"))
        self.info["baseline_rchar"] = median([r["rchar"] for r in base.runs])
        fig = self.measure("list_cold", "segue list --json, cold (no Segue cache; page cache warm)", argv,
                           before=lambda i: self.reset_state(), verify=self.verify_list)
        fig.floor = self.floors["headtail"]
        rchar = median([r["rchar"] for r in fig.runs]) - self.info["baseline_rchar"]
        per_file = rchar / max(1, self.expected["session_files"])
        fig.extra["bytes_read_per_session_file"] = round(per_file)
        fig.extra["session_files"] = self.expected["session_files"]
        self.figures.append(base)
        self.figures.append(fig)
        self.figures.append(Figure.value("read_per_file", "bytes read per session file, cold list (rchar − "
                                         "baseline) / files", per_file / 1024, "KiB"))

    def correctness(self) -> None:
        r = self.run([self.python, "-m", "segue", "list", "--json", "--all"], self.env())
        try:
            listed = json.loads(r.stdout)
        except ValueError:
            listed = []
        res = check(self.expected["sessions"], listed)
        res["stderr"] = r.stderr.strip()[-600:]
        self.info["correctness"] = res
        log(f"correctness: {res['found']}/{res['expected']} sessions found, {res['first_request_ok']} first "
            f"requests right, {res['extra']} extra; per runtime {res['per_runtime']}")

    def list_warm(self) -> None:
        self.run([self.python, "-m", "segue", "list", "--json"], self.env())  # make sure the cache is complete
        self.figures.append(self.measure("list_warm", "segue list --json, warm (cache present, nothing changed)",
                                         [self.python, "-m", "segue", "list", "--json"], verify=self.verify_list))
        self.figures[-1].floor = self.floors["headtail"]

    def list_changed(self) -> None:
        argv = [self.python, "-m", "segue", "list", "--json"]
        changes: list[mutate.Change] = []
        chosen_n: list[int] = []

        def before(i: int) -> None:
            self.run(argv, self.env(), keep_stdout=False)  # settle: the cache matches the store again
            chosen = mutate.choose(self.expected["sessions"], 0.01, self.a.seed * 1000 + i)
            chosen_n.append(len(chosen))
            changes.append(mutate.apply(chosen, self.home, self.cache / "mutate-backup"))

        def after(i: int) -> None:
            changes[-1].undo()

        fig = self.measure("list_changed", "segue list --json, after 1 % of sessions changed", argv,
                           before=before, after=after, verify=self.verify_list)
        fig.extra["changed_sessions"] = chosen_n[0] if chosen_n else 0
        warm = next(f for f in self.figures if f.key == "list_warm")
        fig.floor = warm  # the target is relative to warm
        self.figures.append(fig)
        self.run(argv, self.env(), keep_stdout=False)  # leave the cache settled
        # per runtime: 1 % of that runtime's sessions changed, the rest as they were
        for rt in RUNTIMES:
            pool = [s for s in self.expected["sessions"] if s["runtime"] == rt]
            if not pool:
                continue
            changes.clear()
            chosen_n.clear()

            def before_rt(i: int, pool: list[dict[str, Any]] = pool) -> None:
                self.run(argv, self.env(), keep_stdout=False)
                chosen = mutate.choose(pool, 0.01, self.a.seed * 1000 + i)
                chosen_n.append(len(chosen))
                changes.append(mutate.apply(chosen, self.home, self.cache / "mutate-backup"))

            f = self.measure(f"list_changed_{rt}", f"segue list --json, after 1 % of {rt} sessions changed", argv,
                             before=before_rt, after=after, verify=self.verify_list)
            f.extra["changed_sessions"] = chosen_n[0] if chosen_n else 0
            f.floor = warm
            self.figures.append(f)
            self.run(argv, self.env(), keep_stdout=False)

    def list_cold_opencode(self) -> None:
        """OpenCode alone, no Segue cache: one database holding all its sessions."""
        st = self.cache / f"state-oc-{self.corpus.name}"
        db = self.home / ".local" / "share" / "opencode" / "opencode.db"
        floor = self.measure("floor_opencode_rows", "floor: every OpenCode session row + its first message",
                             [self.python, "-m", "bench.floor", "opencode-rows", str(db)])
        self.floors["opencode_rows"] = floor
        fig = self.measure("list_cold_opencode", "segue list --json --runtime opencode, cold (no Segue cache)",
                           [self.python, "-m", "segue", "list", "--json", "--runtime", "opencode"],
                           env=self.env(state=st), before=lambda i: self.reset_state(st))
        fig.floor = floor
        self.reset_state(st)
        self.figures.append(fig)

    def list_disk_cold(self) -> None:
        if self.cold == "none":
            self.info["disk_cold"] = "not measured: cannot evict the page cache on this machine"
            return
        roots = [str(self.home), str(self.state)]
        ht = [self.python, "-m", "bench.floor", "headtail", str(self.files_txt), "16384"]
        floor = self.measure("floor_headtail_disk_cold", "floor: head+tail 16 KiB of every file, disk-cold", ht,
                             before=lambda i: evict(self.cold, roots))
        self.floors["headtail_disk_cold"] = floor

        def before(i: int) -> None:
            self.reset_state()
            evict(self.cold, roots)

        fig = self.measure("list_disk_cold", f"segue list --json, disk-cold ({self.cold})",
                           [self.python, "-m", "segue", "list", "--json"], before=before, verify=self.verify_list)
        fig.floor = floor
        fig.extra["evicted_with"] = self.cold
        # bytes fetched from storage prove the eviction worked (0 would mean a warm page cache)
        fig.extra["storage_read_mb"] = round(median([r["read_bytes"] for r in fig.runs]) / MB, 1)
        floor.extra["storage_read_mb"] = round(median([r["read_bytes"] for r in floor.runs]) / MB, 1)
        self.figures.append(floor)
        self.figures.append(fig)
        self.run([self.python, "-m", "segue", "list", "--json"], self.env(), keep_stdout=False)  # rebuild the cache

    def inproc_list(self) -> None:
        st = self.cache / f"inproc-{self.corpus.name}"
        self.reset_state(st)
        r = self.run([self.python, "-m", "bench.inproc", "list", str(self.home), str(st)], self.env())
        self.info["inproc_list"] = _json_or_error(r)
        if self.a.profile:
            self.reset_state(st)
            r = self.run([self.python, "-m", "bench.inproc", "list", str(self.home), str(st), "--profile",
                     str(self.out / "profiles")], self.env())
            self.info["inproc_list_profile"] = _json_or_error(r).get("profiles")
        self.reset_state(st)
        d = self.info["inproc_list"]
        if "runtimes" in d:
            files = _files_per_runtime(self.files_txt)
            for rt, v in d["runtimes"].items():
                if v.get("rchar") is not None and files.get(rt):
                    v["session_files"] = files[rt]
                    v["rchar_per_file"] = v["rchar"] / files[rt]
            deep = {rt: v.get("read_deep") for rt, v in d["runtimes"].items()}
            per = {rt: round(v["rchar_per_file"] / 1024, 1) for rt, v in d["runtimes"].items() if "rchar_per_file" in v}
            log(f"in-process: read_deep {deep}; KiB read per session file {per}")

    def brief(self, runtime: str, target: dict[str, Any], home: Path | None = None, state: Path | None = None,
              key: str | None = None) -> None:
        ref = f"{runtime}:{target['id']}"
        env = self.env(home, state)
        # the brief finds its session in a warm cache
        self.run([self.python, "-m", "segue", "list", "--json"], env, keep_stdout=False)
        mb = target["bytes"] / MB
        key = key or f"brief_{runtime}"
        floor = self.measure(f"floor_parse_{key}", f"floor: one json.loads pass over the {mb:.0f} MB {runtime} file",
                             [self.python, "-m", "bench.floor", "parse", target["path"], "json"], env=env)
        self.floors[key] = floor
        self.figures.append(floor)
        if key != "brief_huge":  # the huge file gets only the json floor: each pass takes seconds
            for mode in ("read", "orjson", "skip"):
                f = self.measure(f"floor_parse_{key}_{mode}", f"floor: {mode} pass over the {mb:.0f} MB {runtime} file",
                                 [self.python, "-m", "bench.floor", "parse", target["path"], mode], env=env,
                                 runs=max(3, self.runs // 2))
                self.figures.append(f)
        shape = ", tool output JSON in strings" if key.endswith("_tooljson") else ""
        fig = self.measure(key, f"segue brief {runtime} ({mb:.0f} MB session{shape}) --stdout",
                           [self.python, "-m", "segue", "brief", ref, "--stdout"], env=env, keep_stdout=False)
        fig.floor = floor
        fig.extra["mb_per_s"] = round(mb / fig.wall, 1) if fig.wall else None
        # on a shared machine wall times wait for the CPU: the CPU ratio is the steadier one
        fig.extra["cpu_vs_floor"] = round(fig.cpu / floor.cpu, 2) if floor.cpu else None
        fig.extra["bytes"] = target["bytes"]
        self.figures.append(fig)
        inproc = [self.python, "-m", "bench.inproc", "brief", str(home or self.home), str(state or self.state), ref]
        self.info[f"inproc_{key}"] = _json_or_error(self.run(inproc, env))
        if self.a.profile:
            r = self.run([*inproc, "--profile", str(self.out / "profiles" / key)], env)
            self.info[f"inproc_{key}_profile"] = _json_or_error(r).get("profiles")

    def briefs(self) -> None:
        for rt in ("claude", "codex"):
            t = self.expected["targets"].get(rt)
            if t:
                self.brief(rt, t)
        # the other shape: tool output that is JSON inside a string (nearly every quote escaped)
        mb = self.a.big_mb
        d = self.cache / f"tooljson-b{mb:g}-s{self.a.seed}-v{tooljson.VERSION}"
        if not (d / "targets.json").exists():
            shutil.rmtree(d, ignore_errors=True)
            log(f"writing the tool-output-heavy {mb:g} MB transcripts …")
            tooljson.generate(d, mb, self.a.seed)
        targets = json.loads((d / "targets.json").read_text())
        for rt in ("claude", "codex"):
            if rt in targets:
                self.brief(rt, targets[rt], home=d / "home", state=d / "state", key=f"brief_{rt}_tooljson")

    def huge(self) -> None:
        if self.a.huge_gb <= 0:
            return
        d = self.cache / f"huge-{self.a.huge_gb:g}GB-s{self.a.seed}-v{generate.GEN_VERSION}"
        if not (d / "target.json").exists():
            shutil.rmtree(d, ignore_errors=True)
            log(f"writing a {self.a.huge_gb:g} GB transcript …")
            t0 = time.perf_counter()
            info = generate.generate_huge(d, int(self.a.huge_gb * 1e9), self.a.seed)
            (d / "target.json").write_text(json.dumps(info))
            log(f"  {info['bytes'] / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s")
        info = json.loads((d / "target.json").read_text())
        try:
            self.brief("claude", info, home=Path(info["home"]), state=d / "state", key="brief_huge")
        finally:
            if not self.a.keep:
                shutil.rmtree(d, ignore_errors=True)

    def lsp(self) -> None:
        argv = [self.python, "-m", "segue", "serve"]
        self.run([self.python, "-m", "segue", "list", "--json"], self.env(), keep_stdout=False)
        starts: list[Run] = []
        warm: list[float] = []
        warm_all: list[float] = []
        page: list[float] = []
        page_deep: list[float] = []
        rss: float | None = None
        notes: list[str] = []
        for i in range(self.runs):
            c = Client(argv, self.env(), cwd=str(REPO))
            try:
                c.initialize(str(self.state))
                res, _ = c.request("segue/listSessions", LIST_PARAMS)
                first = time.perf_counter() - c.t_start
                starts.append(Run(wall=first, cpu=float("nan"), rss_mb=float("nan"), rchar=-1, read_bytes=-1, rc=0))
                if i == self.runs - 1:
                    for _ in range(max(10, self.runs * 2)):
                        _, dt = c.request("segue/listSessions", LIST_PARAMS)
                        warm.append(dt)
                    for _ in range(self.runs):
                        res_all, dt = c.request("segue/listSessions", {})
                        warm_all.append(dt)
                    for _ in range(max(10, self.runs * 2)):
                        _, dt = c.request("segue/listSessions", {"limit": 50})
                        page.append(dt)
                    deep_offset = max(0, self.tops - 50)
                    for _ in range(max(10, self.runs * 2)):
                        _, dt = c.request("segue/listSessions", {"limit": 50, "offset": deep_offset})
                        page_deep.append(dt)
                    rss = c.peak_rss_mb()
                    self.info["lsp_listed"] = {"tree_params": len(res["sessions"]),
                                               "all_top_level": len(res_all["sessions"])}
            except LspError as e:
                notes.append(str(e))
            finally:
                c.close()
        fig = Figure.from_runs("lsp_start", "language server: start to first segue/listSessions answer", starts,
                               notes)
        fig.rss_mb = rss if rss is not None else float("nan")
        self.figures.append(fig)
        self.figures.append(Figure.from_times("lsp_list_warm", "segue/listSessions round trip, warm "
                                              "(include_subagents, limit 1000)", warm, rss))
        self.figures.append(Figure.from_times("lsp_list_warm_all", "segue/listSessions round trip, warm "
                                              "(no params: every top-level session)", warm_all, rss))
        self.figures.append(Figure.from_times("lsp_list_page", 'segue/listSessions {"limit": 50}, warm', page, rss))
        self.figures.append(Figure.from_times("lsp_list_page_deep", 'segue/listSessions {"limit": 50, "offset": '
                                              'last page}, warm', page_deep, rss))
        log(f"language server: start {fig.wall:.3f} s, warm round trip {median(warm) * 1000:.1f} ms, "
            f"peak RSS {rss or 0:.1f} MB" + (f" !! {notes[0]}" if notes else ""))
        if self.a.profile:
            self.lsp_profile()

    def lsp_profile(self) -> None:
        """Sample every thread of one server (start, first answer, 20 warm round trips): cProfile would see
        only the main thread, and the server works in worker threads."""
        out = self.out / "profiles" / "lsp-samples.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        c = Client([self.python, "-m", "bench.sampler", str(out), "--", "-m", "segue", "serve"], self.env(),
                   cwd=str(REPO))
        try:
            c.initialize(str(self.state))
            for _ in range(21):
                c.request("segue/listSessions", LIST_PARAMS)
        except LspError as e:
            self.info["lsp_profile_error"] = str(e)
        finally:
            c.close()
        if out.exists():
            d = json.loads(out.read_text())
            self.info["lsp_profile"] = {"self": d["self"][:12], "inclusive": d["inclusive"][:25]}

    # -- all
    def run_all(self) -> None:
        self.out = Path(self.a.out)
        self.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        self.help()
        if not self.a.briefs_only:
            self.floors_list()
            self.list_cold()
            self.correctness()
            self.list_warm()
            self.list_changed()
            self.list_cold_opencode()
            self.list_disk_cold()
            self.inproc_list()
        if not self.a.skip_briefs:
            self.briefs()
        if not self.a.skip_lsp and not self.a.briefs_only:
            self.lsp()
        if not self.a.skip_briefs:
            self.huge()
        self.info["elapsed_s"] = round(time.perf_counter() - t0, 1)
        meta = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": _machine(), "git": _git(),
                "params": {k: v for k, v in vars(self.a).items()}, "corpus": {
                    "dir": str(self.corpus), "bytes": self.expected["bytes"], "counts": self.expected["counts"],
                    "session_files": self.expected["session_files"], "targets": self.expected["targets"]},
                "disk_cold_method": self.cold}
        write_reports(self.out, meta, self.figures, self.info)
        self.spawner.close()
        log(f"done in {self.info['elapsed_s']} s: {self.out / 'results.md'}")


def _files_per_runtime(files_txt: Path) -> dict[str, int]:
    marks = (("/.claude/", "claude"), ("/.codex/", "codex"), ("/opencode/", "opencode"), ("/.cline/", "cline"),
             ("/saoudrizwan.claude-dev/", "cline"), ("/.gemini/", "gemini"))
    out: dict[str, int] = {}
    for line in files_txt.read_text().splitlines():
        rt = next((r for m, r in marks if m in line), None)
        if rt:
            out[rt] = out.get(rt, 0) + 1
    return out


def _json_or_error(r: Run) -> dict[str, Any]:
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"error": f"exit {r.rc}: {r.stderr.strip()[-800:]}"}


def _machine() -> dict[str, Any]:
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024 / 1e9
    except (OSError, ValueError, IndexError):
        pass
    return {"cpus": os.cpu_count(), "load_avg": os.getloadavg(), "mem_gb": round(mem, 1) if mem else None,
            "python": platform.python_version(), "platform": platform.platform()}


def _git() -> str | None:
    """The commit measured; `+dirty` when server/ has uncommitted changes (the editable install runs them)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "server"], cwd=REPO, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions-per-runtime", type=int, help="default 2000 (--quick: 200)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--big-mb", type=float, help="size of the brief targets, MB (default 200; --quick: 20)")
    ap.add_argument("--big-count", type=int, help="big transcripts in the corpus (default 20; --quick: 8)")
    ap.add_argument("--huge-gb", type=float, help="the huge session, GB; 0 skips it (default 2; --quick: 0)")
    ap.add_argument("--quick", action="store_true", help="small corpus, no huge session (~2 minutes)")
    ap.add_argument("--runs", type=int, default=5, help="runs per figure (median; at least 5)")
    ap.add_argument("--cache-dir", default="/tmp/segue-bench", help="where corpora are generated and kept")
    ap.add_argument("--out", default=str(REPO / "bench" / "out"))
    ap.add_argument("--cold", choices=("auto", "drop_caches", "fadvise", "none"), default="auto",
                    help="how disk-cold runs evict the page cache (auto: fadvise on the corpus files; "
                         "drop_caches only when named)")
    ap.add_argument("--profile", action="store_true", help="also write cProfile tables per phase")
    ap.add_argument("--keep", action="store_true", help="keep the huge transcript after the run")
    ap.add_argument("--skip-lsp", action="store_true")
    ap.add_argument("--skip-briefs", action="store_true", help="only the listing and language-server figures")
    ap.add_argument("--briefs-only", action="store_true", help="only the brief figures (both shapes, the huge file)")
    a = ap.parse_args(argv)
    q = a.quick
    a.sessions_per_runtime = a.sessions_per_runtime or (200 if q else 2000)
    a.big_mb = a.big_mb if a.big_mb is not None else (20 if q else 200)
    a.big_count = a.big_count if a.big_count is not None else (8 if q else 20)
    a.huge_gb = a.huge_gb if a.huge_gb is not None else (0 if q else 2)
    if a.runs < 5:
        ap.error("--runs must be at least 5 (each figure is a median of at least 5 runs)")
    return a


def main(argv: list[str] | None = None) -> int:
    Bench(parse_args(argv)).run_all()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
