#!/usr/bin/env python3
"""An adapter that breaks the protocol on purpose, for mqacheck's tests: the NumPy kernel of
numpy_adapter.py, except on the cases named by --on, where it commits --fault:

  crash        dies of SIGSEGV            hang          sleeps past any timeout
  garbage      answers a line of non-JSON noise        prints stray output on stdout, then answers
  wrong-shape  writes float32 [M - 1, N]  wrong-dtype   writes float64 [M, N]
  refuse       answers {"ok": false, "error": ...}      lie           answers "ok" without writing
  bad-seconds  answers "seconds": -1      two-lines     answers twice
  exit-after   exits (status 0) after answering launch 2
  silent       reads every request, never answers (--on is ignored)
  exit         exits at once, before reading anything (--on is ignored)
  bad-bytes    writes bytes that are not UTF-8 to stderr and in its answer (not JSON then)
  long-error   answers twice an error of 100 three-byte characters (a quote cuts it at 120 bytes)
  flood        writes 50 MB to stderr, then answers
  late-answer  answers a request, then answers it again once the next request has come
  orphan       starts a child that holds its stdout, then crashes
  escape       starts `sleep 300` in a session of its own, writes its pid to --side, answers

--side FILE: where `escape` writes its child's pid and `flood` the size of the largest file in
the run's scratch folder at each request."""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_adapter  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fault", required=True)
    parser.add_argument("--on", action="append", default=[], help="case names (default: every case)")
    parser.add_argument("--launch", type=int, default=0, help="only on this launch (default: both)")
    parser.add_argument("--tag", help="ignored: lets a test find its adapter among the processes")
    parser.add_argument("--side", help="a file for what the test checks afterwards")
    args = parser.parse_args()
    if args.fault == "exit":
        print("faulty adapter: exiting at once", file=sys.stderr)
        sys.exit(3)
    late = None  # late-answer: the answer to send again once the next request has come
    for line in sys.stdin:
        request = json.loads(line)
        if args.fault == "silent":
            continue
        if late is not None:
            sys.stdout.write(late)  # the stray: after mqacheck sent this request, before its answer
            sys.stdout.flush()
            late = None
            time.sleep(0.5)
        if args.fault == "flood" and args.side:
            run_folder = os.path.dirname(request["bundle"])
            sizes = [os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(run_folder) for f in files]
            with open(args.side, "a") as side:
                side.write(f"{max(sizes, default=0)}\n")
        spec, arrays = numpy_adapter.load_bundle(request["bundle"])
        case = spec["name"]
        faulty = (not args.on or case in args.on) and (not args.launch or args.launch == request["launch"])
        logits = numpy_adapter.mqa_logits(spec, arrays)
        answer = {"id": request.get("id"), "ok": True, "seconds": 0.001, "label": "faulty"}
        if faulty and args.fault == "crash":
            print(f"faulty adapter: crashing on case {case}", file=sys.stderr)
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        elif faulty and args.fault == "hang":
            time.sleep(3600)
        elif faulty and args.fault == "garbage":
            sys.stdout.write("this is not JSON\n")
            sys.stdout.flush()
            continue
        elif faulty and args.fault == "noise":
            print("loading the kernel... done")
        elif faulty and args.fault == "wrong-shape":
            np.save(request["out"], logits[:-1])
        elif faulty and args.fault == "wrong-dtype":
            np.save(request["out"], logits.astype(np.float64))
        elif faulty and args.fault == "refuse":
            answer = {"id": request.get("id"), "ok": False, "error": f"this kernel does not take case {case}"}
        elif faulty and args.fault == "bad-seconds":
            answer["seconds"] = -1
        elif faulty and args.fault == "lie":
            pass
        elif faulty and args.fault == "bad-bytes":
            sys.stderr.buffer.write(b"faulty adapter: \xff\xfe bytes that are not UTF-8\n")
            sys.stderr.flush()
            sys.stdout.buffer.write(b'{"id": "%s", "ok": false, "error": "bad \xff byte"}\n' % request.get("id", "").encode())
            sys.stdout.flush()
            continue
        elif faulty and args.fault == "long-error":
            # ASCII before the euros so that byte 120 of the line falls inside a euro, whatever the id.
            start = len(json.dumps({"id": request.get("id"), "ok": False, "error": ""})) - 2
            answer = {"id": request.get("id"), "ok": False, "error": "x" * ((120 - start - 1) % 3) + "\u20ac" * 100}
            sys.stdout.write((json.dumps(answer, ensure_ascii=False) + "\n") * 2)
            sys.stdout.flush()
            continue
        elif faulty and args.fault == "orphan":
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", f"--tag={args.tag}"])  # inherits stdout
            os.kill(os.getpid(), signal.SIGSEGV)
        elif faulty and args.fault == "escape":
            child = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(args.side, "w") as side:
                side.write(f"{child.pid}\n")
            numpy_adapter.write_logits(request["out"], logits, fresh=True)
        elif faulty and args.fault == "flood":
            sys.stderr.write(("x" * 999 + "\n") * 50000)
            sys.stderr.flush()
            numpy_adapter.write_logits(request["out"], logits, fresh=True)
        else:
            numpy_adapter.write_logits(request["out"], logits, fresh=True)
        line = json.dumps(answer) + "\n"
        sys.stdout.write(line * 2 if faulty and args.fault == "two-lines" else line)  # one write: one read
        sys.stdout.flush()
        if faulty and args.fault == "exit-after" and request["launch"] == 2:
            sys.exit(0)
        if faulty and args.fault == "late-answer":
            late = line  # the answer just sent


if __name__ == "__main__":
    main()
