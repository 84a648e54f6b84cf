#!/usr/bin/env python3
"""Files: never destroy, never leave half, from the outside.

One test per promise: every command that writes (`check --json`, `fp8 convert --out`,
`run --out`, `gen --out`) leaves a device, a FIFO, a symbolic link, an input and a foreign folder
intact or writes through the link; paths are checked before the work; SIGINT and SIGTERM leave
nothing partial; an edited case.toml is refused; each message names the path and what is accepted.
Run as root here, so no refusal may rely on permissions. Usage: files_test.py MQACHECK_BINARY."""
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish, suite_toml  # noqa: E402
TIMEOUT = 120  # a command that blocks (on a FIFO, say) fails the test instead of hanging it

SMALL_CASE = dict(name="small", m=16, n=64, heads=2, head_dim=32, seed=3, layout=dict(kind="random"))
SMALL_SUITE = suite_toml("files", [SMALL_CASE])
# Seconds of work on this machine (inputs and the exact reference), so that signals land mid-way.
BIG_SUITE = suite_toml("big", [dict(name="big", m=1024, n=8192, heads=64, head_dim=128, layout=dict(kind="causal"))])
# Needs tens of GiB: fails at once under a 2 GiB address-space limit.
# gen writes the reference a block of rows at a time, so a huge reference alone no longer
# runs it out of memory: these queries (2^32 codes, 16 GiB as float32 before quantizing) do.
HUGE_SUITE = suite_toml("huge", [dict(name="huge", m=65536, n=65536, heads=64, head_dim=1024,
                                      layout=dict(kind="causal"))])


def run(*args, **kwargs):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT, **kwargs)


def refused(r, *fragments):
    """Exit 2 with one line on stderr holding every fragment."""
    return (r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
            and all(f in r.stderr for f in fragments))


def hidden(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith("."))


def snapshot(folder):
    """Every entry under a folder with its kind and bytes: equal snapshots mean untouched."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        mode = os.lstat(p).st_mode
        kind = "link" if stat.S_ISLNK(mode) else "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
        out[str(p.relative_to(folder))] = (kind, p.read_bytes() if kind == "file" else os.readlink(p) if kind == "link" else None)
    return out


def character_device(tmp):
    """A private character device (1, 3) like /dev/null, so a regression cannot replace the real
    one; /dev/null itself where this process may not create device nodes."""
    node = Path(tmp) / "null-device"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    except (PermissionError, OSError):
        return Path("/dev/null")


def is_asan_build():
    return b"__asan_init" in Path(BIN).read_bytes()


def two_gib():
    """An address-space limit (for preexec_fn): the huge case fails at once instead of swapping."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def wait_for(predicate, process, limit=60):
    """Polls until predicate() holds; False when the process ended first or time ran out."""
    start = time.time()
    while time.time() - start < limit:
        if predicate():
            return True
        if process.poll() is not None:
            return False
        time.sleep(0.002)
    return False


def staging_of(folder, name):
    return [p for p in Path(folder).iterdir() if p.name.startswith("." + name + ".partial")]


def test_special_files_and_links(tmp, bundle, logits):
    device = character_device(tmp)
    fifo = tmp / "fifo"
    os.mkfifo(fifo)
    codes_in = tmp / "values.npy"
    np.save(codes_in, np.array([1.0, -2.0, 448.0], dtype=np.float32))
    convert = ["fp8", "convert", "--format", "e4m3fn", "--in", codes_in, "--out"]
    small = tmp / "small.toml"

    # A device: refused, still a character device (as root, rename would have replaced it).
    for args in (["check", bundle, "--logits", logits, "--json", device], [*convert, device]):
        r = run(*args)
        expect(refused(r, f"{device}: is a character device", "accepted: a regular file"), f"device: {r.stderr!r}")
    r = run("run", "--cases", small, "--variant", "exact", "--out", device)
    expect(refused(r, f"--out {device}: is a character device", "accepted: a folder"), f"run --out device: {r.stderr!r}")
    expect(r.stdout == "", "run --out device: refused before running anything")
    expect(stat.S_ISCHR(os.stat(device).st_mode), "the device is still a character device")

    # A FIFO: refused at once (never opened, so nothing blocks), still a FIFO.
    for args in (["check", bundle, "--logits", logits, "--json", fifo], [*convert, fifo]):
        r = run(*args)
        expect(refused(r, f"{fifo}: is a FIFO (named pipe)", "accepted: a regular file"), f"FIFO: {r.stderr!r}")
    expect(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is still a FIFO")

    # A symbolic link: written through; the link stays and points where it did.
    for name, args in (("json", ["check", bundle, "--logits", logits, "--json"]), ("npy", convert)):
        target, link = tmp / f"target.{name}", tmp / f"link.{name}"
        target.write_text("old")
        link.symlink_to(target.name)
        r = run(*args, link)
        expect(r.returncode in (0, 1), f"write through a link ({name}): {r.stderr}")
        expect(link.is_symlink() and os.readlink(link) == target.name, f"the {name} link still points to its target")
        expect(target.read_bytes() != b"old", f"the {name} link's target holds the new file")
        dangling = tmp / f"dangling.{name}"
        dangling.symlink_to(f"created.{name}")
        r = run(*args, dangling)
        expect(r.returncode in (0, 1) and dangling.is_symlink() and (tmp / f"created.{name}").is_file(),
               f"a dangling link's target is created ({name}): {r.stderr}")
    expect(b'"verdict"' in (tmp / "target.json").read_bytes(), "the JSON went to the link's target")
    expect(np.load(tmp / "target.npy").dtype == np.uint8, "the codes went to the link's target")

    # run --out: a link to a folder, and a report file that is a link, are written through.
    reports = tmp / "reports-real"
    reports.mkdir()
    (tmp / "reports-link").symlink_to(reports.name)
    (reports / "elsewhere.json").write_text("old")
    (reports / "report.json").symlink_to("elsewhere.json")
    r = run("run", "--cases", small, "--variant", "exact", "--out", tmp / "reports-link")
    expect(r.returncode == 0, f"run into a linked folder: {r.stderr}")
    expect((tmp / "reports-link").is_symlink() and (reports / "report.json").is_symlink(), "run: the links stay")
    expect(b'"schema"' in (reports / "elsewhere.json").read_bytes() and (reports / "summary.md").is_file(),
           "run: report.json written through its link, next to the other reports")
    expect(hidden(reports) == [] and hidden(tmp) == [], "run: no temporaries left")


def test_outputs_never_replace_inputs(tmp, bundle, logits):
    before = logits.read_bytes()
    (tmp / "logits-link.npy").symlink_to(logits.name)
    os.link(logits, tmp / "logits-hard.npy")
    for spelled in (logits, tmp / "logits-link.npy", tmp / "logits-hard.npy", tmp / "sub" / ".." / logits.name):
        (tmp / "sub").mkdir(exist_ok=True)
        r = run("check", bundle, "--logits", logits, "--json", spelled)
        expect(refused(r, f"--json {spelled}: is the same file as --logits", "an output never replaces an input"),
               f"--json {spelled} equal to --logits: {r.stderr!r}")
        expect(r.stdout == "", "refused before judging")
    r = run("check", bundle, "--logits", logits, "--repeat", tmp / "logits-hard.npy", "--json", tmp / "logits-hard.npy")
    expect(refused(r, "is the same file as --logits"), f"--json equal to --repeat: {r.stderr!r}")
    r = run("check", bundle, "--logits", logits, "--json", bundle / "reference.npy")
    expect(refused(r, "is the same file as the bundle's reference.npy"), f"--json onto the bundle: {r.stderr!r}")
    expect(logits.read_bytes() == before, "the logits are intact")
    r = run("fp8", "convert", "--format", "e4m3fn", "--decode", "--in", bundle / "q.npy", "--out", bundle / "q.npy")
    expect(refused(r, "is the same file as --in"), f"convert --out equal to --in: {r.stderr!r}")
    r = run("check", bundle, "--logits", logits)
    expect(r.returncode == 0, "the bundle is intact: " + r.stderr)


def test_force_replaces_only_bundles(tmp):
    small = tmp / "small.toml"
    project = tmp / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.cpp").write_text("int main() {}\n")
    (project / "README").write_text("mine")
    before = snapshot(project)
    r = run("gen", "--cases", small, "--case", "small", "--out", project, "--force")
    expect(refused(r, f"{project}: not a bundle, so --force does not replace it", "README", "src",
                   "a bundle holds only case.toml"), f"--force on a project: {r.stderr!r}")
    expect(snapshot(project) == before and hidden(tmp) == [], "--force on a project: the folder is intact")

    bundle = tmp / "force-bundle"
    expect(run("gen", "--cases", small, "--case", "small", "--out", bundle).returncode == 0, "gen")
    (bundle / "logits.npy").write_bytes(b"kernel output")
    before = snapshot(bundle)
    r = run("gen", "--cases", small, "--case", "small", "--out", bundle, "--force")
    expect(refused(r, "not a bundle", "it holds logits.npy"), f"--force on a bundle with a foreign file: {r.stderr!r}")
    expect(snapshot(bundle) == before, "--force on a bundle with a foreign file: intact")
    (bundle / "logits.npy").unlink()

    (bundle / "case.toml").write_text((bundle / "case.toml").read_text() + "# edited\n")
    r = run("gen", "--cases", small, "--case", "small", "--out", bundle)
    expect(refused(r, f"{bundle}: already exists", "--force"), f"no --force: {r.stderr!r}")
    r = run("gen", "--cases", small, "--case", "small", "--out", bundle, "--force")
    expect(r.returncode == 0 and "# edited" not in (bundle / "case.toml").read_text(), "--force replaces a bundle")
    expect(sorted(os.listdir(bundle)) == ["case.toml", "digest.json", "k.npy", "k_scale.npy", "ke.npy", "ks.npy",
                                          "q.npy", "reference.npy", "weights.npy"] and hidden(tmp) == [],
           "the replaced bundle is whole, nothing left aside")
    # From inside the bundle: "." names it, and the staging folder goes next to it, not into it.
    r = subprocess.run([BIN, "gen", "--cases", "case.toml", "--case", "small", "--out", ".", "--force"], cwd=bundle,
                       capture_output=True, text=True, timeout=TIMEOUT)
    expect(r.returncode == 0 and hidden(bundle) == [] and hidden(tmp) == [] and len(os.listdir(bundle)) == 9,
           f"--out . --force inside a bundle: {r.stderr!r}")
    (tmp / "a-file").write_text("keep")
    r = run("gen", "--cases", small, "--case", "small", "--out", tmp / "a-file", "--force")
    expect(refused(r, "is a regular file") and (tmp / "a-file").read_text() == "keep", f"--force on a file: {r.stderr!r}")


def interrupt(args, ready, out_dir):
    """Starts mqacheck, waits until ready() (work under way), sends each signal; returns what is
    left for the caller to judge, per signal."""
    results = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Default dispositions: a script's background job would otherwise inherit SIGINT ignored,
        # which mqacheck rightly keeps.
        p = subprocess.Popen([BIN, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)])
        reached = wait_for(ready, p)
        p.send_signal(sig)
        _, err = p.communicate(timeout=TIMEOUT)
        results.append((sig, reached, p.returncode, err.decode(), hidden(out_dir)))
    return results


def test_signals_leave_nothing_behind(tmp):
    big = tmp / "big.toml"
    work = tmp / "signals"
    work.mkdir()
    target = work / "bundle"
    gen = ["gen", "--cases", big, "--case", "big", "--out", target]

    # While computing: the staging folder exists (it is reserved before the work).
    for sig, reached, rc, err, left in interrupt(gen, lambda: staging_of(work, "bundle"), work):
        expect(reached, f"gen: the staging folder appears before the work ({sig.name})")
        expect(rc == -sig, f"gen: ended by {sig.name}, rc={rc} {err!r}")
        expect(left == [] and not target.exists(), f"gen interrupted by {sig.name} while computing: left {left}")

    # While writing: the staging folder already holds files.
    def writing():
        staging = staging_of(work, "bundle")
        try:
            return bool(staging) and len(os.listdir(staging[0])) > 0
        except FileNotFoundError:
            return False
    for sig, reached, rc, err, left in interrupt(gen, writing, work):
        if reached:  # the write can be too quick to catch; then the bundle is whole
            expect(rc == -sig and left == [] and not target.exists(),
                   f"gen interrupted by {sig.name} while writing: rc={rc}, left {left}")
        else:
            expect(left == [] and len(os.listdir(target)) == 8, "gen finished whole before the signal")
            shutil.rmtree(target)

    # run --out: a new report folder is not created; an existing one keeps its old reports.
    reports = work / "reports"
    run_big = ["run", "--cases", big, "--variant", "exact", "--out", reports]
    for sig, reached, rc, err, left in interrupt(run_big, lambda: staging_of(work, "reports"), work):
        expect(reached and rc == -sig, f"run: interrupted by {sig.name} during the work: rc={rc} {err!r}")
        expect(left == [] and not reports.exists(), f"run interrupted by {sig.name}: left {left}, --out created")
    reports.mkdir()
    for name in ("report.json", "report.xml", "summary.md"):
        (reports / name).write_text("old " + name)
    before = snapshot(reports)
    for sig, reached, rc, err, left in interrupt(run_big, lambda: time.sleep(0.5) or True, work):
        expect(rc == -sig, f"run with an existing --out ended by {sig.name}: rc={rc}")
        expect(snapshot(reports) == before and hidden(reports) == [],
               f"run interrupted by {sig.name}: the old reports are intact, no temporaries")


def test_paths_are_checked_before_the_work(tmp, bundle, logits):
    big = tmp / "big.toml"
    r = run("check", bundle, "--logits", logits, "--json", tmp / "no" / "such" / "x.json")
    expect(refused(r, f"--json {tmp / 'no' / 'such' / 'x.json'}: the folder {tmp / 'no' / 'such'} does not exist")
           and r.stdout == "", f"check: the JSON path before the verdict: {r.stdout!r} {r.stderr!r}")
    existing = tmp / "existing"
    existing.mkdir()
    for args, fragment in ((["--out", existing], "already exists"), (["--out", tmp / "no" / "b"], "does not exist")):
        if is_asan_build():
            # Generating this case takes many seconds under the sanitizers; refusing, a process start.
            start = time.time()
            r = run("gen", "--cases", big, "--case", "big", *args)
            seconds = time.time() - start
            expect(refused(r, fragment) and seconds < 10, f"gen refuses {args[1]} before computing ({seconds:.1f}s)")
        else:
            # A case that cannot fit in 2 GiB: computing first would end in "out of memory".
            r = run("gen", "--cases", tmp / "huge.toml", "--case", "huge", *args, preexec_fn=two_gib)
            expect(refused(r, fragment), f"gen refuses {args[1]} before computing: {r.stderr!r}")
    for args in (["--out", tmp / "no" / "reports"], ["--variant", "no-such-variant", "--out", tmp / "new-reports"],
                 ["--cases", tmp / "missing.toml", "--out", tmp / "new-reports"]):
        cases = [] if "--cases" in args else ["--cases", tmp / "small.toml"]
        r = run("run", *cases, *args)
        expect(r.returncode == 2 and r.stdout == "" and not (tmp / "new-reports").exists() and hidden(tmp) == [],
               f"run {args}: refused before any case, --out not created: {r.stderr!r}")
    r = run("run", "--cases", tmp / "small.toml", "--variant", "exact", "--out", str(tmp / "slash") + "/")
    expect(r.returncode == 0 and f"reports: {tmp / 'slash' / 'report.json'}, report.xml, summary.md" in r.stdout
           and "//" not in r.stdout, f"run prints paths without //: {r.stdout[-200:]!r}")


def test_edited_case_toml_is_refused(tmp, logits):
    small, with_nan = tmp / "small.toml", tmp / "nan.toml"
    # ml_dtypes and hip-nosat encode differently only past the format's range: a planted NaN.
    with_nan.write_text(suite_toml("files", [dict(SMALL_CASE, special=["nan"])]))
    for key, suite, old, new, explains in (
            ("layout kind", small, 'kind = "random"', 'kind = "causal"', "ks.npy (from its layout"),
            ("seed", small, "seed = 3", "seed = 4", "q.npy (from its seed"),
            ("profile", with_nan, 'profile = "ml_dtypes"', 'profile = "hip-nosat"', "profile")):
        bundle = tmp / ("edited-" + key.replace(" ", "-"))
        expect(run("gen", "--cases", suite, "--case", "small", "--out", bundle).returncode == 0, "gen")
        r = run("check", bundle, "--logits", logits)
        expect(r.returncode in (0, 1), f"the bundle is accepted before the edit: {r.stderr!r}")
        text = (bundle / "case.toml").read_text()
        expect(old in text, f"case.toml holds {old}")
        edited = text.replace(old, new)
        if key == "layout kind":  # causal has no empty_fraction
            edited = re.sub(r"^empty_fraction = .*\n", "", edited, flags=re.M)
        (bundle / "case.toml").write_text(edited)
        r = run("check", bundle, "--logits", logits)
        expect(refused(r, f"{bundle / 'case.toml'}: the arrays do not match the case", explains,
                       "generate the bundle again"), f"check after editing the {key}: {r.stderr!r}")


def test_messages(tmp, bundle, logits):
    small = tmp / "small.toml"
    fifo = tmp / "messages-fifo"
    os.mkfifo(fifo)
    for args in (["cases", tmp], ["gen", "--cases", tmp, "--case", "small", "--out", tmp / "x"], ["run", "--cases", tmp]):
        r = run(*args)
        expect(refused(r, f"{tmp}: is a folder, not a file (accepted: a regular TOML file)"), f"{args[0]} with a folder: {r.stderr!r}")
    for given, kind in ((tmp, "is a folder, not a file"), (fifo, "is a FIFO (named pipe), not a file")):
        r = run("check", bundle, "--logits", given)
        expect(refused(r, f"{given}: {kind} (accepted: a regular .npy file)"), f"--logits {kind}: {r.stderr!r}")
    r = run("check", bundle, "--logits", tmp / "missing.npy")
    expect(refused(r, "missing.npy: no such file (accepted: a regular .npy file)"), f"--logits missing: {r.stderr!r}")
    for args, option in ((["gen", "--cases", small, "--case", "small", "--out", ""], "--out"),
                         (["run", "--cases", small, "--out", ""], "--out"),
                         (["fp8", "convert", "--format", "e4m3fn", "--in", bundle / "k_scale.npy", "--out", ""], "--out"),
                         (["check", bundle, "--logits", logits, "--json", ""], "--json")):
        r = run(*args)
        expect(refused(r, f"mqacheck: {option}: empty path (accepted: ") and ": : " not in r.stderr,
               f"{args[0]} {option} '': {r.stderr!r}")

    # A write that fails (a file-size limit: root ignores permissions, not limits) names the
    # user's path, never a temporary one, and leaves nothing behind.
    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
    out = tmp / "limited"
    out.mkdir()
    for args, named in ((["gen", "--cases", small, "--case", "small", "--out", out / "bundle"], out / "bundle" / "q.npy"),
                        (["fp8", "convert", "--format", "e4m3fn", "--decode", "--in", bundle / "q.npy", "--out",
                          out / "codes.npy"], out / "codes.npy"),
                        (["check", bundle, "--logits", logits, "--json", out / "v.json"], out / "v.json")):
        r = run(*args, preexec_fn=small_files)
        expect(refused(r, f"{named}: cannot write the file (File too large)") and ".partial" not in r.stderr
               and str(os.getpid()) not in r.stderr, f"{args[0]}: a failed write names the user's path: {r.stderr!r}")
        expect(os.listdir(out) == [], f"{args[0]}: a failed write leaves nothing: {os.listdir(out)}")

    # Out of memory names the command and the case (an address-space limit makes it quick).
    if is_asan_build():
        print("skipped: out of memory under AddressSanitizer, which needs its own address space")
        return
    huge = tmp / "huge.toml"
    for args, doing in ((["gen", "--cases", huge, "--case", "huge", "--out", tmp / "huge"], "in gen, case 'huge'"),
                        (["run", "--cases", huge, "--variant", "exact"], f"in run {huge}, case 'huge'")):
        r = run(*args, preexec_fn=two_gib)
        expect(refused(r, "mqacheck: out of memory " + doing, "m=65536, n=65536"),
               f"{args[0]} out of memory: {r.stderr!r}")
    expect(hidden(tmp) == [] and not (tmp / "huge").exists(), "out of memory leaves nothing behind")


with tempfile.TemporaryDirectory() as name:
    tmp = Path(name)
    (tmp / "small.toml").write_text(SMALL_SUITE)
    (tmp / "big.toml").write_text(BIG_SUITE)
    (tmp / "huge.toml").write_text(HUGE_SUITE)
    bundle = tmp / "bundle"
    r = run("gen", "--cases", tmp / "small.toml", "--case", "small", "--out", bundle)
    expect(r.returncode == 0, "gen: " + r.stderr)
    logits = tmp / "logits.npy"
    np.save(logits, np.load(bundle / "reference.npy"))
    for test in (test_special_files_and_links, test_outputs_never_replace_inputs, test_paths_are_checked_before_the_work,
                 test_messages):
        test(tmp, bundle, logits)
    test_force_replaces_only_bundles(tmp)
    test_edited_case_toml_is_refused(tmp, logits)
    test_signals_leave_nothing_behind(tmp)

finish("files")
