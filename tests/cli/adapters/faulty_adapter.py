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
  exit         exits at once, before reading anything (--on is ignored)"""
import argparse
import json
import os
import signal
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
    args = parser.parse_args()
    if args.fault == "exit":
        print("faulty adapter: exiting at once", file=sys.stderr)
        sys.exit(3)
    for line in sys.stdin:
        request = json.loads(line)
        if args.fault == "silent":
            continue
        case = os.path.basename(request["bundle"]).split("-", 1)[1]
        faulty = (not args.on or case in args.on) and (not args.launch or args.launch == request["launch"])
        spec, arrays = numpy_adapter.load_bundle(request["bundle"])
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
        else:
            numpy_adapter.write_logits(request["out"], logits, fresh=True)
        line = json.dumps(answer) + "\n"
        sys.stdout.write(line * 2 if faulty and args.fault == "two-lines" else line)  # one write: one read
        sys.stdout.flush()
        if faulty and args.fault == "exit-after" and request["launch"] == 2:
            sys.exit(0)


if __name__ == "__main__":
    main()
