#!/usr/bin/env python3
"""An adapter that tries to pass without computing, for mqacheck's tests (docs/protocol.md, "What a
kernel can see"). --attack picks how:

  copy-reference  copies reference.npy from the folder it was given into out
  sibling         searches the scratch folder around it for any reference.npy (another case's, the
                  judge's) and copies the first one of the right shape
  link-out        computes honestly, then replaces out by a link to a file of its own
  stale           computes honestly, but answers with what it computed for the previous case (zeros
                  for the first)
  write-after     answers with honest logits, then rewrites out
  fork-writer     answers with honest logits and leaves a child process rewriting out after it
  proc-snoop      looks into mqacheck's /proc/<pid>/fd and /proc/<pid>/mem for the reference;
                  --record FILE gets what it could open
  exact-float64   computes in float64 and rounds once at the end (an exact kernel, whatever it
                  declares), prefill cases only
  plant-links     computes honestly, and plants links to --victim at the names of the temporary
                  files mqacheck would write next beside out, links to the victim's folder at the
                  names the cases of --suite would get as folders of the scratch folder (their
                  number and name), and replaces the folder of its inputs by such a link

Each answers "ok" whatever it found; what it could not get it replaces by zeros."""
import argparse
import glob
import json
import os
import shutil
import sys
import time
import tomllib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_adapter  # noqa: E402


def poisoned_shape(out):
    return np.load(out, mmap_mode="r").shape


def mqacheck_pid():
    pid = os.getppid()
    while pid > 1:
        try:
            if open(f"/proc/{pid}/comm").read().strip() == "mqacheck":
                return pid
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except OSError:
            return None
    return None


def snoop(record, shape):
    """What of mqacheck's /proc entries this process can open; a reference found there, if any."""
    pid, seen, found = mqacheck_pid(), {}, None
    if pid is None:
        seen["mqacheck"] = "not found"
    else:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.endswith(".npy") and found is None:
                    try:
                        a = np.load(f"/proc/{pid}/fd/{fd}")
                        found = a if a.shape[0] == shape[0] and a.dtype == np.float32 else None
                    except (OSError, ValueError):
                        pass
            seen["fd"] = "listed"
        except OSError as e:
            seen["fd"] = type(e).__name__
        try:
            with open(f"/proc/{pid}/mem", "rb") as mem:
                mem.read(1)
            seen["mem"] = "opened"
        except OSError as e:
            seen["mem"] = type(e).__name__
    if record:
        with open(record, "a") as f:
            f.write(json.dumps(seen) + "\n")
    return found


def float64_logits(spec, a):
    """The operation in float64 (exact for these sizes up to the head sum's rounding), rounded to
    float32 once: what a kernel returning the answer rather than its declared arithmetic gives."""
    q = numpy_adapter.decode(a["q"], spec["q_format"]).astype(np.float64)
    k = numpy_adapter.decode(a["k"], spec["k_format"]).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        dots = np.maximum(np.einsum("mhd,nd->mhn", q, k), 0.0)
        logits = np.einsum("mh,mhn->mn", a["weights"].astype(np.float64), dots) * a["k_scale"].astype(np.float64)[None, :]
    j = np.arange(k.shape[0])[None, :]
    inside = (j >= a["ks"][:, None]) & (j < a["ke"][:, None])
    return np.where(inside, logits, -np.inf).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attack", required=True)
    parser.add_argument("--record")
    parser.add_argument("--victim")
    parser.add_argument("--suite")
    args = parser.parse_args()
    computed = {}  # bundle folder -> its honest logits, in the order the cases came
    child = None  # a fork-writer's pipes: go, done
    for line in sys.stdin:
        if child:
            os.write(child[0], b"x")
            os.read(child[1], 1)
            os.close(child[0])
            os.close(child[1])
            child = None
        request = json.loads(line)
        bundle, out = request["bundle"], request["out"]
        shape = poisoned_shape(out)
        spec, arrays = numpy_adapter.load_bundle(bundle)
        answer = {"ok": True, "seconds": 0.001, "label": f"hostile {args.attack}"}
        if "id" in request:
            answer["id"] = request["id"]
        zeros = np.zeros(shape, np.float32)
        honest = None
        if args.attack in ("link-out", "stale", "write-after", "fork-writer", "plant-links"):
            honest = np.full(shape, -np.inf, np.float32)
            compute = numpy_adapter.paged_logits if numpy_adapter.is_paged(spec) else numpy_adapter.mqa_logits
            honest[:, :spec["n"]] = compute(spec, arrays)
        if args.attack == "copy-reference":
            try:
                shutil.copyfile(os.path.join(bundle, "reference.npy"), out)
            except OSError:
                np.save(out, zeros)
        elif args.attack == "sibling":
            found = None
            for candidate in glob.glob(os.path.join(os.path.dirname(os.path.dirname(bundle)), "**", "*.npy"),
                                       recursive=True):
                try:
                    a = np.load(candidate)
                except (OSError, ValueError):
                    continue
                if "reference" in os.path.basename(candidate) and a.shape[0] == shape[0]:
                    found = a
                    break
            np.save(out, found if found is not None else zeros)
        elif args.attack == "link-out":
            own = os.path.join(os.path.dirname(out), f"own-{os.getpid()}.npy")
            np.save(own, honest)
            os.remove(out)
            os.symlink(own, out)
        elif args.attack == "stale":
            computed.setdefault(bundle, honest)
            earlier = [v for k, v in computed.items() if k != bundle]
            np.save(out, earlier[-1] if earlier else zeros)
        elif args.attack in ("write-after", "fork-writer"):
            np.save(out, honest)
        elif args.attack == "plant-links":
            np.save(out, honest)
            pid, folder = mqacheck_pid(), os.path.dirname(out)
            following = os.path.basename(out).replace("launch-1", "launch-2")
            for count in range(400):
                try:
                    os.symlink(args.victim, os.path.join(folder, f".{following}.{pid}-{count}.partial"))
                except OSError:
                    pass
            names = [c["name"] for c in tomllib.load(open(args.suite, "rb"))["case"]] if args.suite else []
            for number, name in enumerate(names, 1):
                try:
                    os.symlink(os.path.dirname(args.victim), os.path.join(os.path.dirname(bundle), f"{number:03}-{name}"))
                except OSError:
                    pass
            moved = bundle + ".moved"
            os.rename(bundle, moved)
            os.symlink(os.path.dirname(args.victim), bundle)
        elif args.attack == "exact-float64":
            np.save(out, float64_logits(spec, arrays))
        elif args.attack == "proc-snoop":
            found = snoop(args.record, shape)
            np.save(out, found if found is not None else zeros)
        print(json.dumps(answer), flush=True)
        if args.attack == "write-after":
            changed = honest.copy()
            changed[:, :spec["n"]] += 1.0
            try:
                np.save(out, changed)
            except OSError:  # the case may be over already
                pass
        elif args.attack == "fork-writer":
            # The child rewrites out once mqacheck has read it (the parent tells it when the next
            # request came) and before the parent answers that one, then goes on writing, in a
            # session of its own, after the parent has moved on.
            go_read, go_write = os.pipe()
            done_read, done_write = os.pipe()
            if os.fork() == 0:
                os.setsid()
                os.close(go_write)
                os.close(done_read)
                os.read(go_read, 1)
                for step in range(20):
                    try:
                        with open(out, "r+b") as f:
                            f.seek(-4, os.SEEK_END)
                            f.write(np.float32(12345.0 + step).tobytes())
                    except OSError:
                        pass
                    if step == 0:
                        os.write(done_write, b"x")
                    time.sleep(0.01)
                os._exit(0)
            os.close(go_read)
            os.close(done_write)
            child = (go_write, done_read)


if __name__ == "__main__":
    main()
