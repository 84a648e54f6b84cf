"""Our Triton kernel (kernels/triton): importable without Triton here; on a CUDA machine with
Triton (the H200), the kernel passes the quick suite under the Hopper MMA contract and both
planted bugs are caught with their class."""
import sys

import numpy as np
import pytest

from conftest import ROOT, python_env, quick_cases
from mqacheck import MqacheckInputError, check, launch, load_bundle
from mqacheck.launch import poison
from mqacheck.loading import load_function

SERVED = ROOT / "kernels" / "triton" / "served.py"


def served(name):
    return load_function(f"{SERVED}:{name}")


def test_imports_without_triton_and_refuses_numpy_bundles(bundles):
    for name in ("correct", "inclusive_end", "tail_tile_dropped"):
        with pytest.raises(RuntimeError, match="runs on a CUDA device: serve it with --device cuda"):
            served(name)(load_bundle(bundles("causal")), poison(32, 150))


def judge(bundle, logits, repeat=None):
    """Under Hopper's wgmma model where this mqacheck has it, else the truncating bound."""
    for contract in ({"accumulate": "sm90-wgmma"}, {"accumulate": "fp22-truncated"}):
        try:
            return check(bundle, logits, repeat=repeat, relu="fmax", **contract)
        except MqacheckInputError as e:
            if "sm90-wgmma" not in str(e):
                raise
    raise AssertionError("unreachable")


# e4m3fnuz is not a Hopper MMA format; our Triton kernel computes the prefill operation.
HOPPER_CASES = [c for c in quick_cases("prefill") if c not in ("fnuz",)]


@pytest.mark.triton
@pytest.mark.parametrize("case", HOPPER_CASES)
def test_correct_kernel_passes(bundles, case):
    b = load_bundle(bundles(case), device="cuda")
    runs = [launch(served("correct"), b, out=poison(b.m, b.n + 64)) for _ in range(2)]
    j = judge(b, runs[0].logits, repeat=runs[1].logits)
    assert j.passed, j.message()
    assert (runs[0].logits[:, b.n:].view(np.uint32) == 0x7FC0DEAD).all()  # the padding is left alone


@pytest.mark.triton
@pytest.mark.parametrize("name, finding", [("inclusive_end", "mask-shift"), ("tail_tile_dropped", "unwritten")])
def test_planted_bugs_are_caught(bundles, name, finding):
    caught = []
    for case in HOPPER_CASES:
        b = load_bundle(bundles(case), device="cuda")
        if finding in judge(b, launch(served(name), b, out=poison(b.m, b.n)).logits).classes():
            caught.append(case)
    assert caught, f"{name} was caught by no quick case"


@pytest.mark.triton
def test_fnuz_is_refused_by_name(bundles):
    b = load_bundle(bundles("fnuz"), device="cuda")
    with pytest.raises(ValueError, match="q is e4m3fnuz: our Triton kernel consumes e4m3fn and e5m2"):
        launch(served("correct"), b)


@pytest.mark.triton
def test_served_through_the_adapter(bundles, tmp_path):
    from host import Adapter
    argv = [sys.executable, "-m", "mqacheck.adapter", "--device", "cuda", "--function", f"{SERVED}:correct",
            "--label", "mqacheck triton"]
    with Adapter(argv, python_env()) as a:
        for launch_no in (1, 2):
            response = a.request(bundles("random"), tmp_path / f"{launch_no}.npy", launch_no, shape=(48, 131),
                                 timeout=300)
            assert response["ok"] and response["seconds"] > 0, response
    b = load_bundle(bundles("random"))
    assert judge(b, np.load(tmp_path / "1.npy"), repeat=np.load(tmp_path / "2.npy")).passed
