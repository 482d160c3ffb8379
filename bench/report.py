"""Figures, targets and the two result files (results.json for comparing runs, results.md for reading)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.proc import Run, median
from segue.stores import RUNTIMES


@dataclass
class Figure:
    key: str
    label: str
    wall: float  # median seconds (or `value` in `unit` for derived figures)
    cpu: float = float("nan")
    rss_mb: float = float("nan")  # the highest peak RSS over the runs
    unit: str = "s"
    runs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    floor: Figure | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_runs(cls, key: str, label: str, runs: list[Run], notes: list[str] | None = None) -> Figure:
        fig = cls(key, label, median([r.wall for r in runs]), cpu=median([r.cpu for r in runs]),
                  rss_mb=max((r.rss_mb for r in runs), default=float("nan")), runs=[r.summary() for r in runs],
                  notes=notes or [])
        workers = [w for r in runs for w in r.workers_rss_mb]
        if workers:  # a process that started others (a cold list's workers): each one's peak, not only the highest
            fig.extra["main_peak_rss_mb"] = round(max(r.main_rss_mb for r in runs), 1)
            fig.extra["worker_peak_rss_mb"] = round(max(workers), 1)
            fig.extra["workers_per_run"] = max(len(r.workers_rss_mb) for r in runs)
        return fig

    def processes(self) -> str:
        """'main X MB, workers ≤ Y MB (N)' for a figure whose process started workers, else ''."""
        e = self.extra
        if "worker_peak_rss_mb" not in e:
            return ""
        return (f"main {e['main_peak_rss_mb']:.1f} MB, {e['workers_per_run']} workers ≤ "
                f"{e['worker_peak_rss_mb']:.1f} MB")

    @classmethod
    def from_times(cls, key: str, label: str, times: list[float], rss_mb: float | None) -> Figure:
        return cls(key, label, median(times), rss_mb=rss_mb if rss_mb is not None else float("nan"),
                   runs=[{"wall": t} for t in times])

    @classmethod
    def value(cls, key: str, label: str, value: float, unit: str) -> Figure:
        return cls(key, label, value, unit=unit)

    @property
    def ratio(self) -> float | None:
        if self.floor is None or not self.floor.wall or math.isnan(self.floor.wall):
            return None
        return self.wall / self.floor.wall

    def to_json(self) -> dict[str, Any]:
        t = TARGETS.get(self.key)
        return {"key": self.key, "label": self.label, "median": _num(self.wall), "unit": self.unit,
                "cpu_s": _num(self.cpu), "peak_rss_mb": _num(self.rss_mb),
                "floor": self.floor.key if self.floor else None,
                "floor_median": _num(self.floor.wall) if self.floor else None,
                "ratio": _num(self.ratio) if self.ratio is not None else None,
                "target": t[0] if t else None, "target_met": target_met(self),
                "runs": self.runs, "notes": self.notes, "extra": self.extra}


def _num(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return round(x, 4)


def _le(x: float, limit: float) -> bool:
    return not math.isnan(x) and x <= limit


# key -> (what the issue asks, the check)
TARGETS: dict[str, tuple[str, Callable[[Figure], bool]]] = {
    "help": ("≤ 0.15 s", lambda f: _le(f.wall, 0.15)),
    "list_warm": ("≤ 1.3 × floor", lambda f: f.floor is not None and _le(f.wall, 1.3 * f.floor.wall)),
    "list_cold": ("≤ 2.5 × floor, ≤ 50 MB", lambda f: f.floor is not None and _le(f.wall, 2.5 * f.floor.wall)
                  and _le(f.rss_mb, 50)),
    "list_cold_opencode": ("≤ 50 MB", lambda f: _le(f.rss_mb, 50)),
    "read_per_file": ("≤ 32 KiB", lambda f: _le(f.wall, 32)),
    "list_changed": ("≤ 1.3 × warm", lambda f: f.floor is not None and _le(f.wall, 1.3 * f.floor.wall)),
    **{f"list_changed_{rt}": ("≤ 1.3 × warm", lambda f: f.floor is not None and _le(f.wall, 1.3 * f.floor.wall))
       for rt in RUNTIMES},
    # the issue's brief row: at most one stdlib-json pass over the same file, on both shapes
    **{key: ("≤ 1.0 × json floor, ≤ 50 MB", lambda f: f.floor is not None and _le(f.wall, f.floor.wall)
             and _le(f.rss_mb, 50))
       for key in ("brief_claude", "brief_codex", "brief_claude_tooljson", "brief_codex_tooljson")},
    "brief_huge": ("≤ 50 MB", lambda f: _le(f.rss_mb, 50)),
    "lsp_list_page": ("≤ 0.05 s", lambda f: _le(f.wall, 0.05)),
    "lsp_list_page_deep": ("≤ 0.05 s", lambda f: _le(f.wall, 0.05)),
    "lsp_list_warm_all": ("≤ 0.15 s", lambda f: _le(f.wall, 0.15)),
    "lsp_start": ("≤ 1 s", lambda f: _le(f.wall, 1.0)),
}


def target_met(f: Figure) -> bool | None:
    t = TARGETS.get(f.key)
    return t[1](f) if t else None


def _fmt(x: float | None, unit: str = "s") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if unit == "s":
        return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"
    return f"{x:.1f} {unit}"


def markdown(meta: dict[str, Any], figures: list[Figure], info: dict[str, Any]) -> str:
    m = meta["machine"]
    c = meta["corpus"]
    p = meta["params"]
    lines = [
        "# Segue benchmark results", "",
        f"{meta['date']}, commit {meta['git']}; {m['cpus']} CPUs, load average "
        f"{', '.join(f'{x:.1f}' for x in m['load_avg'])} at the end, Python {m['python']}.",
        f"Corpus: {sum(c['counts'].values())} sessions ({', '.join(f'{k} {v}' for k, v in c['counts'].items())}), "
        f"{c['session_files']} session files, {c['bytes'] / 1e9:.2f} GB; seed {p['seed']}, big {p['big_mb']:g} MB"
        f" × {p['big_count']}, huge {p['huge_gb']:g} GB. Each figure is the median of {p['runs']} runs; RSS is the "
        f"highest peak over the runs. Disk-cold eviction: {meta['disk_cold_method']}.", "",
        "| figure | median | CPU | peak RSS | floor | ratio | target | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in figures:
        if f.key.startswith("floor_") and f.key.endswith(("_read", "_orjson", "_skip")):
            continue  # listed under the brief details
        t = TARGETS.get(f.key)
        met = target_met(f)
        ratio = f"{f.ratio:.1f}×" if f.ratio is not None else "–"
        lines.append(f"| {f.label} | {_fmt(f.wall, f.unit)} | {_fmt(f.cpu)} | {_fmt(f.rss_mb, 'MB')} | "
                     f"{_fmt(f.floor.wall) if f.floor else '–'} | {ratio} | {t[0] if t else '–'} | "
                     f"{'–' if met is None else ('yes' if met else '**no**')} |")
    details = [f"- {f.label}: " + ", ".join(f"{k} {v}" for k, v in f.extra.items()) for f in figures if f.extra]
    lines += ["", *details, "", *_correctness(info), *_inproc(info), *_briefs(figures, info),
              *_notes(figures, info)]
    return "\n".join(lines) + "\n"


def _correctness(info: dict[str, Any]) -> list[str]:
    r = info.get("correctness")
    if not r:
        return []
    out = ["## Correctness (`segue list --json --all`)", "",
           f"{'All' if r['ok'] else 'NOT all'} generated sessions listed with their first request: "
           f"{r['found']}/{r['expected']} found, {r['first_request_ok']} first requests right, {r['extra']} extra.", "",
           "| runtime | expected | found | first request right | parent wrong |", "|---|---|---|---|---|"]
    for rt, cnt in r["per_runtime"].items():
        out.append(f"| {rt} | {cnt.get('expected', 0)} | {cnt.get('found', 0)} | {cnt.get('first_request_ok', 0)} | "
                   f"{cnt.get('parent_wrong', 0)} |")
    if r.get("missing_by_gen"):
        out.append(f"\nMissing by generation: {r['missing_by_gen']}; e.g. {', '.join(r['missing_examples'][:3])}")
    if r.get("wrong_examples"):
        w = r["wrong_examples"][0]
        out.append(f"\nWrong first request, e.g. {w['ref']} ({w['gen']}): expected {w['expected']!r}, "
                   f"found {w['found']!r}")
    if r.get("stderr"):
        out.append(f"\nstderr: `{r['stderr'][:300]}`")
    return [*out, ""]


def _inproc(info: dict[str, Any]) -> list[str]:
    d = info.get("inproc_list")
    if not d or "runtimes" not in d:
        return [f"In-process listing failed: {d.get('error') if d else 'not run'}", ""]
    out = ["## In-process listing, per reader (cold)", "",
           "| runtime | sources | session files | sessions | discovery | summarize | redact | to_cache | KiB read per "
           "session file | read_deep | errors |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for rt, r in d["runtimes"].items():
        if "error" in r:
            out.append(f"| {rt} | – | – | – | – | – | – | – | – | – | {r['error']} |")
            continue
        per = r.get("rchar_per_file")
        out.append(f"| {rt} | {r['sources']} | {r.get('session_files', '–')} | {r['sessions']} | "
                   f"{_fmt(r['discovery_s'])} | {_fmt(r['summarize_s'])} | {_fmt(r.get('redact_s'))} | "
                   f"{_fmt(r.get('to_cache_s'))} | "
                   f"{'–' if per is None else f'{per / 1024:.1f}'} | {r['read_deep']} | {r['errors']} |")
    out += ["", "| phase | time |", "|---|---|",
            f"| cold scan with worker processes (the CLI's), wall | {_fmt(d.get('parallel_scan_s'))} |",
            f"| … CPU of this process / of the workers | {_fmt(d.get('parallel_scan_main_cpu_s'))} / "
            f"{_fmt(d.get('parallel_scan_workers_cpu_s'))} |",
            f"| cache save ({(d.get('cache_bytes') or 0) / 1e6:.1f} MB) | {_fmt(d.get('cache_save_s'))} |",
            f"| index load (SQLite) | {_fmt(d.get('cache_load_s'))} |",
            f"| cache load: decode blobs, revive × {d.get('cache_sessions')} | {_fmt(d.get('cache_from_cache_s'))} |",
            f"| warm stat pass ({d.get('warm_stat_sources')} sources) | {_fmt(d.get('warm_stat_pass_s'))} |",
            f"| Service.list_sessions, disk cache | {_fmt(d.get('service_list_disk_cache_s'))} |",
            f"| Service.list_sessions, in memory | {_fmt(d.get('service_list_in_memory_s'))} |",
            f"| … of which: scan (stat every source; sessions already in memory) | {_fmt(d.get('in_memory_scan_s'))} |",
            f"| … of which: decorate (kept facts, tokens, lineage, events) | {_fmt(d.get('in_memory_decorate_s'))} |",
            f"| … of which: order + to_json | {_fmt(d.get('in_memory_order_to_json_s'))} |",
            f"| JSON dump ({(d.get('json_bytes') or 0) / 1e6:.1f} MB, indent 2) | {_fmt(d.get('json_dump_s'))} |",
            f"| peak RSS of the in-process run | {_fmt(d.get('vmhwm_mb'), 'MB')} |", ""]
    slow = [(rt, s) for rt, r in d["runtimes"].items() for s in r.get("slowest_sources", [])[:2]]
    if slow:
        out.append("Slowest sources: " + "; ".join(f"{rt} {s['s'] * 1000:.0f} ms `{s['path']}`" for rt, s in slow))
        out.append("")
    return out


def _briefs(figures: list[Figure], info: dict[str, Any]) -> list[str]:
    out = []
    for key in ("brief_claude", "brief_codex", "brief_claude_tooljson", "brief_codex_tooljson", "brief_huge"):
        d = info.get(f"inproc_{key}")
        if not d:
            continue
        if "error" in d:
            out.append(f"- {key}: in-process run failed: {d['error'][:300]}")
            continue
        floors = {mode: f.wall for f in figures for mode in ("read", "orjson", "skip")
                  if f.key == f"floor_parse_{key}_{mode}"}
        fl = ", ".join(f"{k} {_fmt(v)}" for k, v in floors.items())
        out.append(f"- {key}: find (warm listing) {_fmt(d.get('find_s'))}, steps pass {_fmt(d.get('steps_s'))} "
                   f"({d.get('steps')} steps, {d.get('steps_mb_s') or 0:.0f} MB/s), facts {_fmt(d.get('facts_s'))}, "
                   f"render {_fmt(d.get('render_s'))}; peak RSS {_fmt(d.get('vmhwm_mb'), 'MB')}"
                   + (f"; other floors: {fl}" if fl else ""))
    return ["## Briefs, in process", "", *out, ""] if out else []


def _notes(figures: list[Figure], info: dict[str, Any]) -> list[str]:
    out = [f"- {f.label}: {n}" for f in figures for n in f.notes[:2]]
    if info.get("disk_cold"):
        out.append(f"- {info['disk_cold']}")
    return ["## Notes", "", *out, ""] if out else []


def write_reports(out: Path, meta: dict[str, Any], figures: list[Figure], info: dict[str, Any]) -> None:
    data = {"meta": meta, "figures": [f.to_json() for f in figures], "info": info}
    (out / "results.json").write_text(json.dumps(data, indent=1, default=str))
    (out / "results.md").write_text(markdown(meta, figures, info))
