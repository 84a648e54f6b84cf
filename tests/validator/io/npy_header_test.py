#!/usr/bin/env python3
"""The .npy header judged as NumPy judges it, NumPy itself as the oracle.

Headers come from two families: a valid one (every key order, both quote styles, spacing, line
breaks inside the braces, trailing commas, shapes (), (n,), (a, b), Fortran order, versions 1.0 and
2.0), and random mutations of it (a character deleted, inserted, or swapped for one a lax parser
lets through). For each file, NumPy's numpy.lib.format reads the header, and
`mqacheck fp8 convert --decode` reads the whole file. The rules:
  - mqacheck accepts  =>  NumPy accepts, and mqacheck read the same array (values and order);
  - NumPy rejects     =>  mqacheck rejects the header (not the data) with exit 2, one line naming
                          the file;
  - every header of the valid family is accepted.
Usage: npy_header_test.py MQACHECK_BINARY."""
import io
import itertools
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np
import numpy.lib.format as npformat

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
from cli_script import BIN, expect, failures  # noqa: E402

# e4m3fn codes of 0..8, so that the decoded array shows every element's place.
CODES = [0x00, 0x38, 0x40, 0x44, 0x48, 0x4A, 0x4C, 0x4E, 0x50]


HEADER_REFUSALS = ["malformed .npy header", "unsupported dtype"]


def npy_file(header, data, major=1):
    """Preamble, header padded with spaces to a multiple of 64 and a line break, then data."""
    preamble = 6 + 2 + (2 if major == 1 else 4)
    text = header.encode("latin1")
    padding = -(preamble + len(text) + 1) % 64
    text += b" " * padding + b"\n"
    length = struct.pack("<H" if major == 1 else "<I", len(text))
    return b"\x93NUMPY" + bytes([major, 0]) + length + text + data


def numpy_reads(blob):
    """(shape, fortran_order, dtype) as NumPy reads the header, or None when NumPy refuses it."""
    f = io.BytesIO(blob)
    try:
        major, minor = npformat.read_magic(f)
        reader = npformat.read_array_header_1_0 if major == 1 else npformat.read_array_header_2_0
        return reader(f)
    except Exception:  # ValueError, SyntaxError, TokenError, TypeError: every way NumPy refuses
        return None


def valid_family(rng, count):
    headers = []
    for _ in range(count):
        shape = rng.choice([(), (4,), (7,), (2, 3), (3, 2), (2, 3, 2), (0, 5)])
        fortran = rng.choice([True, False])
        quote = lambda: rng.choice(["'", '"'])
        space = lambda: rng.choice(["", " ", "  ", "\t", "\n ", " \n"])
        dims = [space() + str(d) + space() for d in shape]
        if not shape:
            tuple_text = "(" + space() + ")"
        elif len(shape) == 1:
            tuple_text = "(" + dims[0] + "," + space() + ")"
        else:
            tuple_text = "(" + ",".join(dims) + rng.choice(["", ","]) + space() + ")"
        values = {"descr": quote() + "|u1" + quote(), "fortran_order": str(fortran), "shape": tuple_text}
        values["descr"] = values["descr"][0] + "|u1" + values["descr"][0]  # matching quotes
        entries = []
        for k in rng.choice(list(itertools.permutations(values))):
            q = quote()
            entries.append(space() + q + k + q + space() + ":" + space() + values[k] + space())
        header = "{" + ",".join(entries) + rng.choice(["", ",", ", "]) + space() + "}"
        headers.append((header, shape, fortran))
    return headers


LAX = ["", " ", "(", ")", ",", ":", "'", '"', "L", "0", "1", "x", ".", "-", "+", "#", "\\", "[", "]", "{", "}",
       "_", "e", "True", "None", "1_0", "0x1", "\t", "\n", "''", "u"]


def mutate(rng, header):
    at = rng.randrange(len(header) + 1)
    kind = rng.randrange(3)
    if kind == 0 and at < len(header):
        return header[:at] + header[at + 1:]
    if kind == 1:
        return header[:at] + rng.choice(LAX) + header[at:]
    return header[:at] + rng.choice(LAX) + header[at + 1:]


def data_for(parsed):
    shape, fortran, dtype = parsed
    shape = tuple(int(d) for d in shape)  # NumPy's header check lets bools and negative sizes through
    count = int(np.prod(shape)) if len(shape) else 1
    if dtype != np.dtype("u1") or min(shape, default=0) < 0 or count > 10000:
        return b"\0" * 16, None
    codes = np.array([CODES[i % 9] for i in range(count)], dtype=np.uint8)
    values = np.array([float(i % 9) for i in range(count)], dtype=np.float32)
    order = "F" if fortran else "C"
    return codes.tobytes(), values.reshape(shape, order=order)


def mqacheck_reads(path, out):
    if os.path.exists(out):
        os.remove(out)
    r = subprocess.run([BIN, "fp8", "convert", "--format", "e4m3fn", "--decode", "--in", path, "--out", out],
                       capture_output=True, text=True, timeout=60)
    return r, (np.load(out) if r.returncode == 0 else None)


rng = random.Random(20261130)
family = valid_family(rng, 120)
cases = [(h, major, True) for (h, _, _), major in zip(family, itertools.cycle([1, 1, 2]))]
for _ in range(320):
    base, _, _ = rng.choice(family)
    mutated = mutate(rng, base)
    if rng.random() < 0.3:
        mutated = mutate(rng, mutated)
    cases.append((mutated, 1, False))
# Python literals a hand-written parser gets wrong either way, each judged by NumPy: what xtensor's
# parser let through, Python 2's "3L", other integer spellings, nesting, bools as sizes, string
# prefixes, escapes and concatenation, comments, duplicate keys, spacing around the dict, a long header.
TRICKY_SHAPES = ["(48abc, 131xyz)", "(48.0, 131)", "(48 131)", "(4L,)", "(04,)", "(00,)", "(0x4,)", "(1_0,)",
                 "(+4,)", "(-4,)", "((4),)", "((4,),)", "(True,)", "(4.,)", "(4e0,)", "(4,,)", "(,)", "(4)", "[4]",
                 "(4, # four\n)", "(\\\n4,)", "( )", "(4 ,)", "(\t4,\t)", "(2,2)", "(2,\n2)", "(4,)(4,)"]
TRICKY_DESCRS = ["' |u1'", "'|u1 '", "u'|u1'", "b'|u1'", "r'|u1'", "'|' 'u1'", "'|u\\x31'", "'''|u1'''", "'u1'",
                 "'<u1'", "'uint8'", '"|u1"', "'|u1\"", "|u1", "['|u1']", "('|u1', ())"]
TEMPLATE = "{'descr': %s, 'fortran_order': %s, 'shape': %s, }"
tricky = [TEMPLATE % ("'|u1'", "False", shape) for shape in TRICKY_SHAPES]
tricky += [TEMPLATE % (descr, "False", "(4,)") for descr in TRICKY_DESCRS]
tricky += [TEMPLATE % ("'|u1'", order, "(4,)") for order in ["0", "1", "true", "None", "(False)", "not True"]]
tricky += [" " + TEMPLATE % ("'|u1'", "False", "(4,)"),
           TEMPLATE % ("'|u1'", "False", "(4,)") + "\n",
           TEMPLATE % ("'|u1'", "False", "(4,)") + " # comment",
           "{'descr': '|u1', 'descr': '|u1', 'fortran_order': False, 'shape': (4,), }",
           "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), 'shape': (4,)}",
           "{'descr': '|u1', 'fortran_order': False}", "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), 'x': 1}",
           "dict(descr='|u1', fortran_order=False, shape=(4,))", "{}", "{,}", "",
           family[0][0] + " " * 10001]
cases += [(header, major, False) for header in tricky for major in (1, 2)]

accepted_by_both = rejected_by_both = 0
with tempfile.TemporaryDirectory() as tmp:
    path, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
    for header, major, must_accept in cases:
        blob = npy_file(header, b"", major)
        parsed = numpy_reads(blob)
        data, expected = data_for(parsed) if parsed else (b"\0" * 16, None)
        with open(path, "wb") as f:
            f.write(npy_file(header, data, major))
        r, got = mqacheck_reads(path, out)
        what = f"header {header!r} (version {major}.0)"
        if must_accept:
            expect(parsed is not None, f"NumPy refuses a header of the valid family: {what}")
            expect(r.returncode == 0, f"mqacheck refuses {what}: {r.stderr.strip()}")
        if r.returncode == 0:
            expect(parsed is not None, f"mqacheck accepts what NumPy refuses: {what}")
            if parsed is not None and expected is not None:
                expect(got.shape == expected.shape and np.array_equal(got, expected),
                       f"mqacheck read another array than NumPy: {what}: {got!r} vs {expected!r}")
            accepted_by_both += parsed is not None
        else:
            expect(r.returncode == 2 and r.stderr.startswith("mqacheck: " + path + ": ")
                   and len(r.stderr.strip().splitlines()) == 1, f"one line naming the file, exit 2: {what}: {r.stderr!r}")
            rejected_by_both += parsed is None
        if parsed is None:
            # Refused for the header itself, not for data a lax reading of it would size otherwise.
            expect(r.returncode == 2 and any(m in r.stderr for m in HEADER_REFUSALS),
                   f"NumPy refuses the header, mqacheck does not: {what}: {r.stderr.strip()}")

# The comparison means something only if both outcomes occurred often.
expect(accepted_by_both >= 120 and rejected_by_both >= 100,
       f"too few cases on one side: {accepted_by_both} accepted, {rejected_by_both} rejected by both")
print(f"{'FAILED' if failures else 'passed'}: npy headers against NumPy ({len(cases)} headers, "
      f"{accepted_by_both} accepted and {rejected_by_both} rejected by both, {len(failures)} failures)")
sys.exit(1 if failures else 0)
