#!/usr/bin/env python3
"""Text from an adapter and a suite in the reports: a label, an error and a suite name carrying
HTML, Markdown structure, Unicode bidi controls, noncharacters and terminal escapes are shown, never
obeyed. summary.md, report.html, report.xml and certify's certificate.md must hold no tag and no
bidi or control character they were sent, report.xml must be well-formed XML, every table row keeps
its table's columns, and `diff` and `certify` print none of it raw to the terminal. Usage:
hostile_text_test.py MQACHECK_BINARY."""
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import as_clean_build, expect, finish, run, suite_toml  # noqa: E402

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
LABEL = "<img src=x onerror=alert(1)> *k* | [l](javascript:x) \u202eevil\u2066x\u2069"
ERROR = ("<script>alert(1)</script> | `tick` **b** \u202edrow\u202c \x1b[31mred\x07 \uffff\n# heading\n<img src=y>")
SUITE = "hostile \u202esuite\x1b[32m"

# An adapter (docs/protocol.md) that answers case 'a' with the label, leaving the output poisoned,
# and case 'b' with the error. It echoes a request's "id" where there is one.
ADAPTER = f'''
import json, os, sys, tomllib
for line in sys.stdin:
    request = json.loads(line)
    case = tomllib.load(open(os.path.join(request["bundle"], "case.toml"), "rb"))["case"][0]["name"]
    if case == "a":
        answer = {{"ok": True, "label": {LABEL!r}}}
    else:
        answer = {{"ok": False, "error": {ERROR!r}}}
    if "id" in request:
        answer["id"] = request["id"]
    print(json.dumps(answer), flush=True)
'''

SHAPE = dict(m=4, n=16, heads=1, head_dim=32, layout=dict(kind="causal"))


def tables(md):
    """The Markdown tables: runs of consecutive lines that start with a pipe."""
    out, run_of_rows = [], []
    for line in md.splitlines() + [""]:
        if line.startswith("|"):
            run_of_rows.append(line)
        elif run_of_rows:
            out.append(run_of_rows)
            run_of_rows = []
    return out


def unescaped_pipes(line):
    return len(re.findall(r"(?<!\\)\|", line))


with tempfile.TemporaryDirectory() as name:
    tmp = Path(name)
    (tmp / "adapter.py").write_text(ADAPTER)
    suite = tmp / "hostile.toml"
    suite.write_text(suite_toml(SUITE, [dict(name="a", **SHAPE), dict(name="b", **SHAPE)]))
    out = tmp / "reports"
    command = f"{sys.executable} {tmp / 'adapter.py'} '<i>|x</i>'"
    r = run("run", "--cases", suite, "--kernel", command, "--accumulate", "fp32", "--out", out,
            env=dict(os.environ, TMPDIR=str(tmp)))
    expect(r.returncode == 1 and (out / "summary.md").is_file(), f"the run ends with findings: {r.returncode} {r.stderr}")
    if (out / "summary.md").is_file():
        md = (out / "summary.md").read_text(encoding="utf-8")
        html = (out / "report.html").read_text(encoding="utf-8")
        xml = (out / "report.xml").read_text(encoding="utf-8")
        for file, text in [("summary.md", md), ("report.html", html), ("report.xml", xml)]:
            expect(not any(c in text for c in BIDI), f"{file}: no bidi control the adapter sent")
            expect(not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), f"{file}: no control character")
            expect("<img" not in text and "<script>alert" not in text and "<i>" not in text, f"{file}: no tag from elsewhere")
            expect("u202e" in text, f"{file}: U+202E shown visibly")
            expect("\uffff" not in text, f"{file}: no noncharacter")
        expect("&lt;img src=x onerror=alert(1)&gt;" in md and "\\*k\\*" in md and "\\u202eevil" in md,
               f"summary.md shows the label as text: {md}")
        expect("&lt;i&gt;\\|x&lt;/i&gt;" in md, f"summary.md shows the kernel command as text: {md}")
        expect(not re.search(r"^#", md.split("\n", 1)[1], re.M), f"summary.md: no heading from elsewhere: {md}")
        # Every table (the matrix, the results with their 12 columns) keeps its header's columns.
        found = tables(md)
        expect(any(unescaped_pipes(t[0]) == 13 and len(t) >= 4 for t in found) and
               all(unescaped_pipes(row) == unescaped_pipes(t[0]) for t in found for row in t),
               f"summary.md: every row keeps its table's columns: {found}")
        rows = [row for t in found for row in t]
        expect(found and any("&lt;img src=x onerror=alert(1)&gt;" in row for row in found[0][2:]),
               f"the label heads a row of the matrix, the first table: {found[:1]}")
        expect(any("&lt;script&gt;alert(1)&lt;/script&gt;" in row for row in rows), f"the error is in the table: {rows}")
        try:
            ElementTree.parse(out / "report.xml")
        except ElementTree.ParseError as e:
            expect(False, f"report.xml is well-formed XML: {e}")
    # Certified against its own report: the broken expectation (case b's error) is the reason given,
    # in certificate.md as text; certify's and diff's tables on the terminal show what they quote.
    cert = tmp / "certificate"
    as_clean_build(out / "report.json")
    c = run("certify", "--cases", suite, "--kernel", command, "--accumulate", "fp32", "--baseline", out / "report.json",
            "--out", cert, env=dict(os.environ, TMPDIR=str(tmp)))
    expect(c.returncode == 1 and (cert / "certificate.md").is_file(), f"NOT CERTIFIED: {c.returncode} {c.stderr}")
    if (cert / "certificate.md").is_file():
        md = (cert / "certificate.md").read_text(encoding="utf-8")
        expect(not any(ch in md for ch in BIDI) and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", md) and "\uffff" not in md,
               f"certificate.md: no bidi or control character: {md!r}")
        expect("<script>" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md, f"certificate.md: the reason as text: {md}")
    d = run("diff", out / "report.json", cert / "report.json")
    for what, text in [("certify", c.stdout), ("diff", d.stdout)]:
        expect(not any(ch in text for ch in BIDI) and "\x1b" not in text and "\x07" not in text,
               f"{what}'s stdout: no bidi control, escape sequence or bell: {text!r}")
    expect(d.returncode in (0, 1) and "\\u202esuite\\u001b[32m" in d.stdout, f"diff names the suite visibly: {d.stdout!r}")
    # The terminal: the label (the variant's name), notes and errors printed, never obeyed.
    expect(not any(c in r.stdout for c in BIDI) and "\x1b" not in r.stdout and "\x07" not in r.stdout,
           f"stdout: no bidi control, escape sequence or bell from the adapter: {r.stdout!r}")
    expect("\\u202eevil" in r.stdout and "\\u001b[31mred" in r.stdout, f"stdout shows them visibly: {r.stdout!r}")

finish("hostile text")
