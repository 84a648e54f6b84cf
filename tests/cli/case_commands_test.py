"""`mqacheck cases` and `mqacheck gen` from the outside: exit codes, messages, bundle files and bytes.

Usage: case_commands_test.py MQACHECK. Needs only the standard library: .npy files are parsed here
and the reference is checked against exact rational arithmetic (fractions), sharing no code
with the C++ under test.
"""
import ast
import os
import re
import struct
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

MQACHECK = sys.argv[1]
ROOT = Path(__file__).resolve().parents[2]
LAYOUTS = ROOT / "cases" / "layouts.toml"
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what)


def run(*args):
    return subprocess.run([MQACHECK, *map(str, args)], capture_output=True, text=True)


def read_npy(path):
    """(dtype string, shape, flat list of values) of a little-endian, C-order .npy file."""
    data = Path(path).read_bytes()
    assert data[:6] == b"\x93NUMPY", path
    major = data[6]
    header_len = struct.unpack("<H" if major == 1 else "<I", data[8:10] if major == 1 else data[8:12])[0]
    start = (10 if major == 1 else 12) + header_len
    header = ast.literal_eval(data[(10 if major == 1 else 12):start].decode("latin1"))
    assert not header["fortran_order"], path
    count = 1
    for extent in header["shape"]:
        count *= extent
    code = {"|u1": "B", "<i4": "i", "<f4": "f"}[header["descr"]]
    values = list(struct.unpack("<%d%s" % (count, code), data[start:start + count * struct.calcsize(code)]))
    return header["descr"], tuple(header["shape"]), values


def e4m3fn(code):
    """Exact value of an OCP e4m3fn code (None for NaN)."""
    sign = -1 if code & 0x80 else 1
    exponent, mantissa = (code >> 3) & 0xF, code & 7
    if exponent == 15 and mantissa == 7:
        return None
    if exponent == 0:
        return sign * Fraction(mantissa, 2 ** 9)
    return sign * Fraction(8 + mantissa, 8) * Fraction(2) ** (exponent - 7)


def case_names(suite):
    return re.findall(r'^\[\[case\]\]\s*\nname = "([^"]+)"', Path(suite).read_text(), re.M)


def listed_hidden(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith("."))


def test_cases_lists_one_line_per_case():
    result = run("cases", LAYOUTS)
    check(result.returncode == 0, "cases exits 0: " + result.stderr)
    lines = result.stdout.splitlines()
    names = case_names(LAYOUTS)
    check(len(lines) == len(names) and len(names) >= 7, "one line per case")
    by_name = {line.split()[0]: line for line in lines}
    check(sorted(by_name) == sorted(names), "every case listed by name")
    check("m=16 n=48 heads=4 head_dim=32" in by_name.get("causal", ""), "shape of causal")
    check("q=e4m3fn k=e4m3fn" in by_name.get("causal", ""), "formats of causal")
    expected_empty = {"causal": 0, "compressed": 3, "context-parallel": 1, "explicit": 1, "explicit-out-of-range": 2}
    for name, empty in expected_empty.items():
        check(by_name.get(name, "").endswith("empty_rows=%d" % empty), "%s has %d empty rows" % (name, empty))
    for layout in ["causal", "packed", "context-parallel", "sliding", "compressed", "random", "explicit"]:
        check(any(("layout=%s" % layout) in line for line in lines), "layouts.toml has a %s case" % layout)


def check_bundle_contents(folder, windows_must_be_in_range=True, finite_in_windows=True):
    text = (Path(folder) / "case.toml").read_text()
    get = lambda key: int(re.search(r"^%s = (\d+)$" % key, text, re.M).group(1))
    m, n, h, d = get("m"), get("n"), get("heads"), get("head_dim")
    expected = {"q": ("|u1", (m, h, d)), "k": ("|u1", (n, d)), "k_scale": ("<f4", (n,)), "weights": ("<f4", (m, h)),
                "ks": ("<i4", (m,)), "ke": ("<i4", (m,)), "reference": ("<f4", (m, n))}
    if 'kind = "paged"' in text:  # a decode case: the cache, its table and lengths replace k
        next_n, two_d = get("next_n"), "context_lens_2d = true" in text
        del expected["k"], expected["k_scale"]
        expected |= {"kv_cache": ("|u1", (get("num_blocks"), get("page_bytes"))),
                     "block_table": ("<i4", (m // next_n, get("max_blocks"))),
                     "context_lens": ("<i4", (m // next_n, next_n) if two_d else (m // next_n,))}
    kinds = {name: read_npy(Path(folder) / (name + ".npy")) for name in expected}
    for name, (dtype, shape) in expected.items():
        check(kinds[name][:2] == (dtype, shape), "%s: %s is %s %s" % (folder, name, dtype, shape))
    ks, ke, reference = kinds["ks"][2], kinds["ke"][2], kinds["reference"][2]
    for i in range(m):
        if windows_must_be_in_range:
            check(0 <= ks[i] <= ke[i] <= n, "%s: row %d window in range" % (folder, i))
        for j in range(n):
            inside = max(ks[i], 0) <= j < min(ke[i], n)
            value = reference[i * n + j]
            if not inside:
                check(value == float("-inf"), "%s: reference[%d, %d] is -inf outside the window" % (folder, i, j))
            elif finite_in_windows:
                check(value == value and abs(value) != float("inf"), "%s: reference[%d, %d] finite" % (folder, i, j))
    return kinds


def test_reference_is_the_exact_value_rounded():
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "packed"
        result = run("gen", "--cases", LAYOUTS, "--case", "packed", "--out", out)
        check(result.returncode == 0, "gen packed: " + result.stderr)
        arrays = check_bundle_contents(out)
        _, (m, h, d), q = arrays["q"]
        _, (n, _), k = arrays["k"]
        k_scale, weights, ks, ke, reference = (arrays[x][2] for x in ["k_scale", "weights", "ks", "ke", "reference"])
        qv = [e4m3fn(c) for c in q]
        kv = [e4m3fn(c) for c in k]
        worst = Fraction(0)
        for i in range(m):
            for j in range(ks[i], ke[i]):
                total = Fraction(0)
                for head in range(h):
                    dot = sum(qv[(i * h + head) * d + t] * kv[j * d + t] for t in range(d))
                    total += Fraction(weights[i * h + head]) * max(dot, Fraction(0))
                exact = Fraction(k_scale[j]) * total
                got = Fraction(reference[i * n + j])
                if exact != 0:
                    worst = max(worst, abs(got - exact) / abs(exact))
                else:
                    check(got == 0, "reference[%d, %d] is 0" % (i, j))
        # Correctly rounded float32: within half an ulp, 2^-24 relative (all values here are normal).
        check(worst <= Fraction(1, 2 ** 24), "reference within half an ulp of the exact value (worst %g)" % worst)


def bundle_bytes(folder):
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}


def test_gen_is_bit_identical_and_reloadable():
    for suite in sorted((ROOT / "cases").glob("*.toml")):
        if suite.name != "nightly.toml":  # production shapes: the GPU suite generates those (ci/gpu.sh)
            gen_every_case(suite)


def gen_every_case(suite):
    with tempfile.TemporaryDirectory() as tmp:
        for name in case_names(suite):
            a, b, c = (Path(tmp) / (name + suffix) for suffix in ["-a", "-b", "-c"])
            fingerprints = []
            for out in (a, b):
                result = run("gen", "--cases", suite, "--case", name, "--out", out)
                check(result.returncode == 0, "gen %s: %s" % (name, result.stderr))
                fingerprints.append(re.findall(r"inputs fingerprint ([0-9a-f]{16})$", result.stdout, re.M))
            check(len(fingerprints[0]) == 1 and fingerprints[0] == fingerprints[1], "%s: one fingerprint, twice" % name)
            check(bundle_bytes(a) == bundle_bytes(b), "%s: two runs give the same bytes" % name)
            paged = b'kind = "paged"' in bundle_bytes(a)["case.toml"]  # the cache, table, lengths replace k, k_scale
            check(len(bundle_bytes(a)) == (10 if paged else 9), "%s: case.toml, its arrays and digest.json" % name)
            # The resolved case.toml is a one-case suite that gives the same bundle again.
            result = run("gen", "--cases", a / "case.toml", "--case", name, "--out", c)
            check(result.returncode == 0, "gen from %s/case.toml: %s" % (name, result.stderr))
            check(bundle_bytes(a) == bundle_bytes(c), "%s: the resolved case reproduces the bundle" % name)
            # Only the layouts suite promises finite logits (values.toml plants NaN on purpose).
            check_bundle_contents(a, windows_must_be_in_range="out-of-range" not in name,
                                  finite_in_windows=suite == LAYOUTS)
        check(listed_hidden(tmp) == [], "no temporary folders left")


def test_bad_input_exits_2_with_one_line_and_no_output():
    with tempfile.TemporaryDirectory() as tmp:
        bad = ROOT / "tests/validator/case/bad/unknown-layout-key.toml"
        out = Path(tmp) / "out"
        result = run("gen", "--cases", bad, "--case", "c", "--out", out)
        check(result.returncode == 2, "bad suite: exit 2")
        check(result.stderr.count("\n") == 1, "bad suite: one line")
        check(re.search(r"unknown-layout-key\.toml:11:42: case 'c': key 'layout\.windw'", result.stderr) is not None,
              "bad suite: file:line:column, case and key: " + result.stderr)
        check(not out.exists() and listed_hidden(tmp) == [], "bad suite: nothing written")

        result = run("gen", "--cases", LAYOUTS, "--case", "nope", "--out", out)
        check(result.returncode == 2 and "no case named 'nope'" in result.stderr, "unknown case: exit 2 and names it")
        check(not out.exists(), "unknown case: nothing written")

        result = run("cases", Path(tmp) / "missing.toml")
        check(result.returncode == 2 and "missing.toml: no such file (accepted: a regular TOML file)" in result.stderr,
              "missing suite: exit 2, named")

        out.mkdir()
        (out / "mine").write_text("keep")
        result = run("gen", "--cases", LAYOUTS, "--case", "causal", "--out", out)
        check(result.returncode == 2 and "already exists" in result.stderr, "existing --out: exit 2")
        check((out / "mine").exists(), "existing --out: untouched")
        result = run("gen", "--cases", LAYOUTS, "--case", "causal", "--out", out, "--force")
        check(result.returncode == 2 and "not a bundle" in result.stderr and "mine" in result.stderr,
              "--force on a folder that is not a bundle: exit 2 naming what is foreign: " + result.stderr)
        check(sorted(p.name for p in out.iterdir()) == ["mine"], "--force on a foreign folder: untouched")
        (out / "mine").unlink()
        result = run("gen", "--cases", LAYOUTS, "--case", "packed", "--out", out, "--force")
        check(result.returncode == 0, "--force into an empty folder: " + result.stderr)
        result = run("gen", "--cases", LAYOUTS, "--case", "causal", "--out", out, "--force")
        check(result.returncode == 0 and 'name = "causal"' in (out / "case.toml").read_text(), "--force replaces a bundle")
        check(listed_hidden(tmp) == [], "--force: no temporaries left")


for test in [test_cases_lists_one_line_per_case, test_reference_is_the_exact_value_rounded,
             test_gen_is_bit_identical_and_reloadable, test_bad_input_exits_2_with_one_line_and_no_output]:
    test()

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
