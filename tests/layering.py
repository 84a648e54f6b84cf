#!/usr/bin/env python3
"""The folders are the architecture: this test reads every #include "..." of the product's sources
and fails when one reaches up a layer or closes a cycle.

Top-level folders form layers, each allowed to include only itself and the layers below it:

    reference  <-  kernels  <-  validator  <-  reports  <-  api  <-  cli
                                                                 <-  python (its extension, python/core)

cli and python are two applications on the same library: neither includes the other.

Inside reference/, kernels/ and validator/, each subfolder (and the folder's own top files) is a
unit, and the include graph between units must have no cycle. The failure names every include
that breaks a rule, with its file and line.

    python3 tests/layering.py [REPOSITORY_ROOT]
"""
import os
import re
import sys
from collections import defaultdict

LAYERS = ["reference", "kernels", "validator", "reports", "api", "cli", "python"]
# A layer's rank: a file may include its own layer and those of a lower rank only.
RANK = {"reference": 0, "kernels": 1, "validator": 2, "reports": 3, "api": 4, "cli": 5, "python": 5}
# Folders whose subfolders must not include one another in a cycle.
SPLIT = {"reference", "kernels", "validator"}
SOURCE = re.compile(r"\.(hpp|cpp|h|hip|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def unit_of(path):
    """reference/exact/gpu/x.hip -> reference/exact/gpu; validator/io/x.hpp -> validator/io;
    kernels/contract.hpp -> kernels (the folder's own top files)."""
    parts = path.split("/")
    if parts[0] not in SPLIT or len(parts) == 2:
        return parts[0]
    # reference/exact/gpu is a unit of its own: the GPU oracle sits above the CPU reference.
    if parts[:3] == ["reference", "exact", "gpu"]:
        return "reference/exact/gpu"
    return "/".join(parts[:2])


def includes(root):
    """(including file, line number, included file), paths relative to root."""
    for top in LAYERS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not SOURCE.search(name):
                    continue
                path = os.path.relpath(os.path.join(folder, name), root)
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        # Relative to the including file first, as the preprocessor looks.
                        beside = os.path.normpath(os.path.join(os.path.dirname(path), target))
                        if os.path.exists(os.path.join(root, beside)):
                            target = beside
                        elif not os.path.exists(os.path.join(root, target)):
                            continue  # a system or generated header
                        yield path, number, target


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def check(root):
    problems = []
    graph, example = defaultdict(set), {}
    count = 0
    for path, line, target in includes(root):
        count += 1
        top, target_top = path.split("/")[0], target.split("/")[0]
        if target_top in RANK and target_top != top and RANK[target_top] >= RANK[top]:
            problems.append(f"{path}:{line}: includes {target}: {top}/ may not include {target_top}/ "
                            f"(layers, lowest first: {' <- '.join(LAYERS[:5])} <- cli | python)")
        a, b = unit_of(path), unit_of(target)
        if a != b and a.split("/")[0] == b.split("/")[0]:
            graph[a].add(b)
            example.setdefault((a, b), f"{path}:{line} includes {target}")
    for component in cycles(graph):
        edges = [example[(a, b)] for a in component for b in component if (a, b) in example]
        problems.append(f"include cycle between {', '.join(component)}:\n    " + "\n    ".join(edges))
    return count, problems


def self_test():
    """The check itself must be able to fail: on a small tree with an upward include and a cycle
    between validator's subfolders it reports both."""
    import tempfile
    files = {
        "reference/fp8/a.hpp": '#include "kernels/b.hpp"\n',
        "kernels/b.hpp": "",
        "python/core/e.cpp": '#include "cli/f.hpp"\n',
        "cli/f.hpp": "",
        "validator/case/c.hpp": '#include "validator/inputs/d.hpp"\n',
        "validator/inputs/d.hpp": '#include "../case/c.hpp"\n',
    }
    with tempfile.TemporaryDirectory() as tree:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tree, name)), exist_ok=True)
            with open(os.path.join(tree, name), "w") as f:
                f.write(text)
        _, problems = check(tree)
    upward = [p for p in problems if p.startswith("reference/fp8/a.hpp:1: includes kernels/b.hpp")]
    cycle = [p for p in problems if p.startswith("include cycle between validator/case, validator/inputs")]
    sideways = [p for p in problems if p.startswith("python/core/e.cpp:1: includes cli/f.hpp")]
    if len(problems) != 3 or not upward or not cycle or not sideways:
        print("layering: the self-test on a tree with one upward include, one sideways and one cycle reported:",
              problems)
        return False
    return True


def main():
    if not self_test():
        return 1
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    count, problems = check(os.path.abspath(root))
    if count == 0:
        print(f"layering: no #include found under {root}: wrong repository root?")
        return 1
    for p in problems:
        print(p)
    print(f"layering: {count} includes read; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
