#!/usr/bin/env python3
"""report.html in a real browser: Debian's Chromium, headless, loads the report of a
run and its rendered DOM is checked: every result has its section with a histogram (one bar per
nonempty ULP bucket) and two heat maps with cells, every figure is laid out with a nonzero size,
a mask mutant's map shows mismatch cells, the page links to nothing outside itself, and the
console stays empty. Chromium is started with a fresh profile and no background
networking. Usage: html_browser_test.py MQACHECK_BINARY."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish  # noqa: E402
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

SUITE = """[suite]
name = "html"
[defaults]
heads = 4
head_dim = 32
[[case]]
name = "causal"
m = 16
n = 150
layout = { kind = "causal" }
[[case]]
name = "wide"
description = "more keys than heat-map cells: the map is downsampled"
m = 200
n = 700
layout = { kind = "sliding", window = 300 }
"""
# A probe the test adds to its copy of the page (the report has no script): the laid-out size of
# every figure and the number of cells each map shows, written into the DOM for --dump-dom.
PROBE = """<script>
window.addEventListener('load', () => {
  const sizes = [...document.querySelectorAll('svg')].map(s => {
    const b = s.getBoundingClientRect();
    return [s.getAttribute('class'), Math.round(b.width), Math.round(b.height)];
  });
  document.body.setAttribute('data-layout', JSON.stringify(sizes));
});
</script>"""


class Dom(HTMLParser):
    """Sections, figures and their elements as Chromium serialised them."""

    def __init__(self):
        super().__init__()
        self.sections, self.stack, self.body, self.links = [], [], {}, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.links += [v for k, v in attrs if k in ("src", "href", "xlink:href", "srcset", "data", "action")]
        classes = (a.get("class") or "").split()
        if tag == "body":
            self.body = a
        if tag == "section" and "result" in classes:
            self.sections.append({"case": a.get("data-case"), "variant": a.get("data-variant"), "svgs": [], "bars": 0})
        elif self.sections and tag == "svg":
            self.sections[-1]["svgs"].append({"class": a.get("class"), "cells": set(), "paths": 0})
        elif self.sections and self.sections[-1]["svgs"]:
            svg = self.sections[-1]["svgs"][-1]
            if "bar" in classes:
                self.sections[-1]["bars"] += 1
            if "cell" in classes:
                svg["cells"].update(c for c in classes if c != "cell")
                svg["paths"] += tag == "path" and (a.get("d") or "").startswith("M")


def chromium(url, profile, *extra):
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, url]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


if CHROMIUM is None:
    print("FAIL: chromium is not installed (Debian package chromium; ci/install-deps.sh installs it)")
    sys.exit(1)

with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "suite.toml")
    with open(suite, "w") as f:
        f.write(SUITE)
    out = os.path.join(tmp, "reports")
    r = subprocess.run([BIN, "run", "--cases", suite, "--variant", "fp32-naive", "--variant", "mutant-inclusive-end",
                        "--variant", "mutant-tail-tile", "--out", out], capture_output=True, text=True)
    expect(r.returncode == 0, f"run: {r.returncode} {r.stdout[-300:]} {r.stderr}")
    report = json.load(open(os.path.join(out, "report.json")))
    page = os.path.join(out, "report.html")

    # The page as it is: its DOM after load, and the console.
    loaded = chromium("file://" + page, os.path.join(tmp, "profile1"), "--dump-dom")
    expect(loaded.returncode == 0 and "</html>" in loaded.stdout, f"chromium loads the page: {loaded.returncode} "
                                                                   f"{loaded.stderr[-500:]}")
    console = [line for line in loaded.stderr.splitlines() if ":CONSOLE" in line]
    expect(console == [], f"no console messages (errors, blocked requests): {console}")
    dom = Dom()
    dom.feed(loaded.stdout)
    results = report["results"]
    # Self-contained: the only links are to the page's own sections; no url() in the styles.
    expect(all(link.startswith("#r") for link in dom.links) and "url(" not in loaded.stdout,
           f"nothing outside the page: {[link for link in dom.links if not link.startswith('#r')]}")
    expect(len(dom.sections) == len(results) == 6, f"a section per case x variant: {len(dom.sections)}")
    for section, result in zip(dom.sections, results):
        name = f"{result['case']} x {result['variant']}"
        expect((section["case"], section["variant"]) == (result["case"], result["variant"]), f"{name}: in order")
        kinds = [s["class"] for s in section["svgs"]]
        expect(kinds == ["histogram", "heatmap errors", "heatmap masks"], f"{name}: its three figures: {kinds}")
        buckets = sum(1 for c in result["metrics"]["ulp"]["histogram_log2"] if c > 0)
        expect(section["bars"] == buckets and buckets > 0, f"{name}: {section['bars']} bars for {buckets} buckets")
        for svg in section["svgs"][1:]:
            expect(svg["cells"], f"{name}: {svg['class']} has cells")
        masks = section["svgs"][2]["cells"]
        if result["variant"] == "mutant-inclusive-end":
            expect(any(c.startswith("m") for c in masks), f"{name}: mismatch cells drawn: {masks}")
        elif result["variant"] == "fp32-naive":
            expect(not any(c.startswith("m") or c == "u" for c in masks), f"{name}: no mismatch drawn: {masks}")
        if result["case"] == "wide":
            expect(result["metrics"]["heat_map"]["cols"] == 128, f"{name}: the map is downsampled")

    # A copy with the probe: every figure has a laid-out size.
    probed = os.path.join(tmp, "probed.html")
    with open(page) as f:
        html = f.read()
    with open(probed, "w") as f:
        f.write(html.replace("</body>", PROBE + "</body>"))
    laid = chromium("file://" + probed, os.path.join(tmp, "profile2"), "--dump-dom", "--window-size=1300,900")
    dom = Dom()
    dom.feed(laid.stdout)
    sizes = json.loads(dom.body.get("data-layout", "[]"))
    expect(len(sizes) == 3 * len(results) + 0 and all(w > 100 and h > 40 for _, w, h in sizes),
           f"every figure is laid out: {sizes[:6]} ... ({len(sizes)})")

finish("report.html in Chromium")
