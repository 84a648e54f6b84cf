"""Whether two suite reports (report.json) say the same of the same kernel: the same schema (every key
path, in every object), the same verdict, findings and metrics case by case, the same skips and
mutant coverage. What differs by nature is left out: times, and how the kernel was run.

    python3 python/tests/same_report.py A/report.json B/report.json     exit 0 when they agree
"""
from __future__ import annotations

import json
import sys
from typing import Any

TIMES = {"seconds", "kernel_seconds", "kernel_seconds_median", "kernel_noise", "warmup_seconds", "kernel_launches",
         "adapter", "timings"}


def without_times(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: without_times(v) for k, v in x.items() if k not in TIMES and not k.endswith("_seconds")}
    if isinstance(x, list):
        return [without_times(v) for v in x]
    return x


def key_paths(x: Any, at: str = "") -> set[str]:
    paths: set[str] = set()
    if isinstance(x, dict):
        for k, v in x.items():
            paths |= {f"{at}.{k}"} | key_paths(v, f"{at}.{k}")
    elif isinstance(x, list):
        for v in x:
            paths |= key_paths(v, f"{at}[]")
    return paths


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What two reports disagree on; empty where they agree. Results are matched by case (the kernel's
    label may differ)."""
    found = []
    if key_paths(a) != key_paths(b):
        found.append(f"schemas differ: only in the first {sorted(key_paths(a) - key_paths(b))}, "
                     f"only in the second {sorted(key_paths(b) - key_paths(a))}")
    ours = {r["case"]: without_times(r) for r in a["results"]}
    theirs = {r["case"]: without_times(r) for r in b["results"]}
    if list(ours) != list(theirs):
        found.append(f"cases differ: {list(ours)} and {list(theirs)}")
    for case in ours.keys() & theirs.keys():
        x, y = dict(ours[case]), dict(theirs[case])
        x.pop("variant"), y.pop("variant")
        for key in sorted(x.keys() | y.keys()):
            if x.get(key) != y.get(key):
                found.append(f"case {case}: {key} differs: {str(x.get(key))[:300]} | {str(y.get(key))[:300]}")
    strip = lambda rows: [{k: v for k, v in r.items() if k != "variant"} for r in rows]  # noqa: E731
    if strip(a["skipped"]) != strip(b["skipped"]):
        found.append(f"skipped differ: {a['skipped']} | {b['skipped']}")
    if [(m["must_produce"], m["caught_by"]) for m in a["mutants"]] != [(m["must_produce"], m["caught_by"]) for m in b["mutants"]]:
        found.append(f"mutants differ: {a['mutants']} | {b['mutants']}")
    if a["expectations_hold"] != b["expectations_hold"]:
        found.append("expectations_hold differs")
    return found


if __name__ == "__main__":
    with open(sys.argv[1]) as f, open(sys.argv[2]) as g:
        problems = differences(json.load(f), json.load(g))
    for p in problems:
        print(p)
    print(f"{sys.argv[1]} and {sys.argv[2]}: " + ("the same verdicts, findings and metrics" if not problems else "DIFFER"))
    sys.exit(1 if problems else 0)
