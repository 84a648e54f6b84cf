#!/usr/bin/env python3
"""report.html in a real browser: Debian's Chromium, headless, loads the report of a
run and its rendered DOM is checked: the verdict and the case x variant matrix stand on a first
screen of 1280 x 800, each matrix cell links to its result and is coloured by its standing (a
mutant silent while another case catches it is no failure), the results that break an
expectation come first and open, the others folded; figures (a histogram with one bar per
nonempty ULP bucket, two heat maps with cells) only where a result breaks an expectation or
shows a mutant's first catch, each laid out with a nonzero size; a mask mutant's map shows
mismatch cells; a link into a fold opens it; the page links to nothing outside itself, the
console stays empty, and a screenshot of the first screen is painted. Chromium is started with a
fresh profile and no background networking. Usage: html_browser_test.py MQACHECK_BINARY."""
import json
import os
import re
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
# A probe the test adds to its copy of the page (the report has no script), written into the DOM
# for --dump-dom: where the verdict and the matrix stand on the first screen, whether they and
# folded content are rendered, then, every <details> opened, the laid-out size of every figure.
PROBE = """<script>
window.addEventListener('load', () => {
  const top = id => Math.round(document.getElementById(id).getBoundingClientRect().top);
  const shown = selector => document.querySelector(selector).checkVisibility();
  const first = {verdict: top('verdict'), matrix: top('matrix'), shown: [shown('#verdict'), shown('#matrix'),
                 shown('#skipped li'), shown('#results section')],
                 open: [...document.querySelectorAll('details')].filter(d => d.open).length};
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const sizes = [...document.querySelectorAll('svg')].map(s => {
    const b = s.getBoundingClientRect();
    return [s.getAttribute('class'), Math.round(b.width), Math.round(b.height)];
  });
  document.body.setAttribute('data-first-screen', JSON.stringify(first));
  document.body.setAttribute('data-layout', JSON.stringify(sizes));
});
</script>"""
SCREEN = (1280, 800)  # a laptop's first screen


class Dom(HTMLParser):
    """Sections, figures, matrix cells and folds as Chromium serialised them."""

    def __init__(self):
        super().__init__()
        self.sections, self.body, self.links, self.cells = [], {}, [], {}
        self.details, self.cell_class = 0, None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.links += [v for k, v in attrs if k in ("src", "href", "xlink:href", "srcset", "data", "action")]
        classes = (a.get("class") or "").split()
        if tag == "body":
            self.body = a
        if tag == "details":
            self.details += 1
        if tag == "td":
            self.cell_class = next((c[3:] for c in classes if c.startswith("st-")), None)
        if tag == "a" and self.cell_class and (a.get("href") or "").startswith("#r"):
            self.cells[int(a["href"][2:])] = self.cell_class
        if tag == "section" and "result" in classes:
            self.sections.append({"id": a.get("id"), "case": a.get("data-case"), "variant": a.get("data-variant"),
                                  "folded": self.details > 0, "svgs": [], "bars": 0})
        elif self.sections and tag == "svg":
            self.sections[-1]["svgs"].append({"class": a.get("class"), "cells": set(), "paths": 0})
        elif self.sections and self.sections[-1]["svgs"]:
            svg = self.sections[-1]["svgs"][-1]
            if "bar" in classes:
                self.sections[-1]["bars"] += 1
            if "cell" in classes:
                svg["cells"].update(c for c in classes if c != "cell")
                svg["paths"] += tag == "path" and (a.get("d") or "").startswith("M")

    def handle_endtag(self, tag):
        if tag == "details":
            self.details -= 1
        if tag == "td":
            self.cell_class = None


def standings(report):
    """Each result's standing as the page must colour it, and whether it must be drawn: a mutant
    is judged over the suite (caught on some case), so one silent on a case is no failure unless
    no case caught it; figures go to what breaks an expectation and each mutant's first catch."""
    blind = {m["variant"] for m in report["mutants"] if not m["caught_by"]}
    out, first_catch = [], set()
    for r in report["results"]:
        if r["outcome"] in ("FAIL", "error") or r["variant"] in blind:
            standing = "broken"
        elif r["kind"] == "mutant":
            standing = r["outcome"]
        else:
            standing = "pass"
        drawn = standing == "broken" or (standing == "caught" and r["variant"] not in first_catch)
        first_catch |= {r["variant"]} if standing == "caught" else set()
        out.append((standing, drawn))
    return out


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
    # A correct variant that passes (no figures), one skipped on both cases (gfx942-mfma takes
    # fnuz operands), two mutants caught and one no case catches (blind: its results break the
    # expectations and are drawn on both cases, the wide one downsampled).
    r = subprocess.run([BIN, "run", "--cases", suite, "--variant", "fp32-naive", "--variant", "gfx942-mfma",
                        "--variant", "mutant-inclusive-end", "--variant", "mutant-tail-tile",
                        "--variant", "mutant-fnuz-keeps-0x80", "--out", out], capture_output=True, text=True)
    expect(r.returncode == 1 and "mutant-fnuz-keeps-0x80" in r.stdout, f"run: {r.returncode} {r.stdout[-300:]} {r.stderr}")
    report = json.load(open(os.path.join(out, "report.json")))
    page = os.path.join(out, "report.html")
    results = report["results"]
    expected = standings(report)
    expect(len(report["skipped"]) == 2 and {s for s, _ in expected} == {"pass", "caught", "broken"},
           f"the run has skipped pairs, passes, catches and a blind mutant: {expected}")

    # The page as it is: its DOM after load, and the console.
    loaded = chromium("file://" + page, os.path.join(tmp, "profile1"), "--dump-dom")
    expect(loaded.returncode == 0 and "</html>" in loaded.stdout, f"chromium loads the page: {loaded.returncode} "
                                                                   f"{loaded.stderr[-500:]}")
    console = [line for line in loaded.stderr.splitlines() if ":CONSOLE" in line]
    expect(console == [], f"no console messages (errors, blocked requests): {console}")
    dom = Dom()
    dom.feed(loaded.stdout)
    # Self-contained: the only links are to the page's own sections; no url() in the styles.
    expect(all(link.startswith("#") for link in dom.links) and "url(" not in loaded.stdout,
           f"nothing outside the page: {[link for link in dom.links if not link.startswith('#')]}")
    # The matrix: a cell per result, linking to it, coloured by its standing.
    expect(dom.cells == {i: s for i, (s, _) in enumerate(expected)}, f"the matrix's cells: {dom.cells} "
                                                                      f"for {expected}")
    # The sections: what breaks an expectation first and open, every other result folded.
    order = [i for i, (s, _) in enumerate(expected) if s == "broken"] + \
            [i for i, (s, _) in enumerate(expected) if s != "broken"]
    expect([s["id"] for s in dom.sections] == [f"r{i}" for i in order] and len(order) == len(results) == 8,
           f"a section per case x variant, the broken first: {[s['id'] for s in dom.sections]}")
    for section in dom.sections:
        i = int(section["id"][1:])
        result, (standing, drawn) = results[i], expected[i]
        name = f"{result['case']} x {result['variant']}"
        expect((section["case"], section["variant"]) == (result["case"], result["variant"]), f"{name}: its section")
        expect(section["folded"] == (standing != "broken"), f"{name}: folded unless it breaks an expectation")
        kinds = [s["class"] for s in section["svgs"]]
        if not drawn:
            expect(kinds == [], f"{name}: {standing}, no figures: {kinds}")
            continue
        expect(kinds == ["histogram", "heatmap errors", "heatmap masks"], f"{name}: its three figures: {kinds}")
        buckets = sum(1 for c in result["metrics"]["ulp"]["histogram_log2"] if c > 0)
        expect(section["bars"] == buckets and buckets > 0, f"{name}: {section['bars']} bars for {buckets} buckets")
        for svg in section["svgs"][1:]:
            expect(svg["cells"], f"{name}: {svg['class']} has cells")
        masks = section["svgs"][2]["cells"]
        if result["variant"] == "mutant-inclusive-end":
            expect(any(c.startswith("m") for c in masks), f"{name}: mismatch cells drawn: {masks}")
        elif result["variant"] == "mutant-fnuz-keeps-0x80":
            expect(not any(c.startswith("m") or c == "u" for c in masks), f"{name}: no mismatch drawn: {masks}")
        if result["case"] == "wide":
            expect(result["metrics"]["heat_map"]["cols"] == 128, f"{name}: the map is downsampled")
    drawn_cases = {results[i]["case"] for i, (_, d) in enumerate(expected) if d}
    expect(drawn_cases == {"causal", "wide"}, f"figures on both cases: {drawn_cases}")
    # A matrix cell's link into the fold opens it (the browser, not a script, does).
    folded = next(s["id"] for s in dom.sections if s["folded"])
    followed = chromium(f"file://{page}#{folded}", os.path.join(tmp, "profile4"), "--dump-dom")
    expect(re.search(r'<details id="results" open', followed.stdout) and
           not re.search(r'<details id="(skipped|mutants)" open', followed.stdout),
           f"following #{folded} opens its fold alone")

    # A copy with the probe, on a first screen: the verdict and the matrix in it, the folds shut;
    # opened, every figure has a laid-out size.
    probed = os.path.join(tmp, "probed.html")
    with open(page) as f:
        html = f.read()
    with open(probed, "w") as f:
        f.write(html.replace("</body>", PROBE + "</body>"))
    size = f"--window-size={SCREEN[0]},{SCREEN[1]}"
    laid = chromium("file://" + probed, os.path.join(tmp, "profile2"), "--dump-dom", size)
    dom = Dom()
    dom.feed(laid.stdout)
    first = json.loads(dom.body.get("data-first-screen", "{}"))
    expect(0 <= first.get("verdict", -1) < first.get("matrix", -1) < SCREEN[1],
           f"the verdict, then the matrix's top, on the first screen: {first}")
    expect(first.get("shown") == [True, True, False, False] and first.get("open") == 0,
           f"the verdict and the matrix rendered, the folds shut: {first}")
    sizes = json.loads(dom.body.get("data-layout", "[]"))
    drawn = sum(1 for _, d in expected if d)
    expect(len(sizes) == 3 * drawn and all(w > 100 and h > 40 for _, w, h in sizes),
           f"every figure is laid out: {sizes[:6]} ... ({len(sizes)} for {drawn} drawn results)")

    # The first screen as Chromium paints it: a PNG of the window's size.
    shot = os.path.join(tmp, "first-screen.png")
    painted = chromium("file://" + page, os.path.join(tmp, "profile3"), f"--screenshot={shot}", size)
    png = open(shot, "rb").read() if os.path.isfile(shot) else b""
    expect(painted.returncode == 0 and png[:8] == b"\x89PNG\r\n\x1a\n" and
           (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == SCREEN,
           f"a screenshot of the first screen: {painted.returncode} {len(png)} bytes {painted.stderr[-300:]}")

finish("report.html in Chromium")
