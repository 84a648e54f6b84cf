#!/usr/bin/env python3
"""Suite tests spread over a host's GPUs by CTest itself (tests/support/gpu_suites.cmake):
a throwaway CMake project registers six tests with the project's own mqa_add_suite_test, each a
probe that records the GPU it was shown and when it ran; `ctest -j4 --resource-spec-file` with a
spec of two GPUs must show each test exactly one of them (CUDA_VISIBLE_DEVICES and
HIP_VISIBLE_DEVICES alike), use both, and never run two tests on one GPU at once. Without a spec
file nothing is hidden. No GPU is needed: CTest allocates ids, the wrapper only passes them on.
Usage: gpu_suites_test.py MQACHECK_BINARY (unused)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
failures = []

PROBE = """import json, os, sys, time
start = time.time()
time.sleep(0.4)
with open(os.path.join(sys.argv[1], sys.argv[2] + ".json"), "w") as f:
    json.dump({"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"), "hip": os.environ.get("HIP_VISIBLE_DEVICES"),
               "start": start, "end": time.time()}, f)
"""
SPEC = {"version": {"major": 1, "minor": 0}, "local": [{"gpus": [{"id": "0", "slots": 1}, {"id": "1", "slots": 1}]}]}


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    project, build, log = (os.path.join(tmp, d) for d in ("project", "build", "log"))
    os.makedirs(project)
    os.makedirs(log)
    with open(os.path.join(tmp, "probe.py"), "w") as f:
        f.write(PROBE)
    with open(os.path.join(tmp, "spec.json"), "w") as f:
        json.dump(SPEC, f)
    with open(os.path.join(project, "CMakeLists.txt"), "w") as f:
        f.write(f"""cmake_minimum_required(VERSION 3.25)
project(gpu_suites NONE)
enable_testing()
set(MQA_SUITES_TAKE_GPUS ON)
include({ROOT}/tests/support/gpu_suites.cmake)
foreach(i RANGE 1 6)
  mqa_add_suite_test(suite.${{i}} {sys.executable} {tmp}/probe.py {log} ${{i}})
endforeach()
""")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")}
    r = subprocess.run(["cmake", "-S", project, "-B", build], capture_output=True, text=True, env=env)
    expect(r.returncode == 0, f"configure: {r.stderr[-500:]}")
    r = subprocess.run(["ctest", "--test-dir", build, "-j4", "--resource-spec-file", os.path.join(tmp, "spec.json")],
                       capture_output=True, text=True, env=env)
    expect(r.returncode == 0, f"ctest with two GPUs: {r.stdout[-800:]}")
    runs = [json.load(open(os.path.join(log, f"{i}.json"))) for i in range(1, 7)]
    expect(all(x["cuda"] in ("0", "1") and x["hip"] == x["cuda"] for x in runs),
           f"each test sees one GPU: {[(x['cuda'], x['hip']) for x in runs]}")
    expect({x["cuda"] for x in runs} == {"0", "1"}, "both GPUs used")
    for a in runs:
        for b in runs:
            if a is not b and a["start"] < b["end"] and b["start"] < a["end"]:
                expect(a["cuda"] != b["cuda"], f"two tests on GPU {a['cuda']} at once")
    expect(any(a is not b and a["start"] < b["end"] and b["start"] < a["end"] for a in runs for b in runs),
           "tests ran side by side on the two GPUs")

    shutil.rmtree(log)
    os.makedirs(log)
    r = subprocess.run(["ctest", "--test-dir", build, "-j4"], capture_output=True, text=True, env=env)
    runs = [json.load(open(os.path.join(log, f"{i}.json"))) for i in range(1, 7)]
    expect(r.returncode == 0 and all(x["cuda"] is None and x["hip"] is None for x in runs),
           "without a spec file every GPU stays visible")

print(f"{'FAILED' if failures else 'passed'}: suites over GPUs ({len(failures)} failures)")
sys.exit(1 if failures else 0)
