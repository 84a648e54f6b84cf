"""The whole quick suite through a served NumPy kernel, as `run --kernel` will drive it: one
adapter process for the suite, poisoned output, launch 1 and 2, each case judged with
`mqacheck check --repeat`. The correct kernel passes every case; each planted bug is caught by a
finding of its class on at least one case. Prefill kernels get the prefill cases, paged ones the
paged cases (run --kernel --operation)."""
import subprocess
import sys

import pytest

from conftest import QUICK, python_env, quick_cases
from host import Adapter
from mqacheck import check, load_bundle
from mqacheck.judgement import Judgement

import numpy as np


def judge_suite(function, bundles, tmp_path, stride_pad=0, operation="prefill", convention="bundle"):
    argv = [sys.executable, "-m", "mqacheck.adapter", "--function", f"numpy_kernels:{function}",
            "--convention", convention, "--device", "numpy"]
    verdicts: dict[str, Judgement] = {}
    with Adapter(argv, python_env()) as a:
        for case in quick_cases(operation):
            b = load_bundle(bundles(case))
            outs = [tmp_path / f"{case}.{launch}.npy" for launch in (1, 2)]
            for launch, out in enumerate(outs, start=1):
                response = a.request(b.path, out, launch, shape=(b.m, b.n + stride_pad))
                assert response["ok"], (case, response)
            verdicts[case] = check(b, np.load(outs[0]), repeat=np.load(outs[1]), accumulate="fp32")
        status, rest, _ = a.close()
    assert status == 0 and rest == ""
    return verdicts


def assert_every_case_passes(verdicts, operation, at_least):
    """Every case of the operation in the quick suite was judged (at least `at_least` of them), and passed."""
    failed = {c: v.message() for c, v in verdicts.items() if not v.passed}
    assert not failed, failed
    assert len(verdicts) == len(quick_cases(operation)) >= at_least


def test_correct_kernel_passes_quick(bundles, tmp_path):
    assert_every_case_passes(judge_suite("tiled_in_place", bundles, tmp_path, stride_pad=7), "prefill", 15)


@pytest.mark.parametrize("function, convention", [("paged_fp32_kernel", "bundle"),
                                                  ("deepgemm_fp8_paged_mqa_logits", "deepgemm-paged")])
def test_paged_kernel_passes_the_paged_cases(bundles, tmp_path, function, convention):
    verdicts = judge_suite(function, bundles, tmp_path, operation="paged", convention=convention)
    assert_every_case_passes(verdicts, "paged", 3)


@pytest.mark.parametrize("function, finding", [("inclusive_end_kernel", "mask-shift"),
                                               ("tail_dropped_in_place", "unwritten")])
def test_planted_bug_is_caught(bundles, tmp_path, function, finding):
    verdicts = judge_suite(function, bundles, tmp_path)
    caught_by = [c for c, v in verdicts.items() if finding in v.classes()]
    assert caught_by, {c: sorted(v.classes()) for c, v in verdicts.items()}
