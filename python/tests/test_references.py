"""The reference styles people use, judged against exact: the NumPy twins on the CPU, the torch
originals where torch is (the H200). They are styles of the prefill operation: the quick suite's
prefill cases."""
import numpy as np
import pytest

from conftest import quick_cases
from mqacheck import check, load_bundle
from mqacheck.references import numpy_styles, torch_styles
from mqacheck.references.numpy_styles import round_to_bfloat16

PREFILL = quick_cases("prefill")
POSITIVE_SCALES = [c for c in PREFILL if c != "negative-k-scale"]


def test_round_to_bfloat16_hand_checked():
    x = np.array([1.0, 1 + 2**-8, 1 + 2**-8 + 2**-20, 1 + 3 * 2**-8, 3.4028235e38, -2.0**-133, np.inf],
                 dtype=np.float32)
    want = np.array([1.0, 1.0, 1 + 2**-7, 1 + 2**-6, np.inf, -2.0**-133, np.inf], dtype=np.float32)
    np.testing.assert_array_equal(round_to_bfloat16(x), want)  # ties to even, up, overflow to inf
    nan = round_to_bfloat16(np.array([np.nan], dtype=np.float32))
    assert np.isnan(nan[0]) and (nan.view(np.uint32) & 0xFFFF == 0).all()


@pytest.mark.parametrize("case", PREFILL)
def test_fp32_einsum_passes_the_fp32_contract(bundles, case):
    b = load_bundle(bundles(case))
    j = check(b, numpy_styles.fp32_einsum(b), accumulate="fp32")
    assert j.passed, j.message()


@pytest.mark.parametrize("case", POSITIVE_SCALES)
def test_deepgemm_test_reference_passes_fp32(bundles, case):
    b = load_bundle(bundles(case))
    j = check(b, numpy_styles.deepgemm_test(b), accumulate="fp32")
    assert j.passed, j.message()


def test_scale_before_relu_fails_negative_scales(bundles):
    """BUGCLASSES 8: every style that scales k before relu differs where k_scale < 0."""
    b = load_bundle(bundles("negative-k-scale"))
    for style in (numpy_styles.deepgemm_test, numpy_styles.vllm_bf16, numpy_styles.vllm_rocm_bf16):
        assert "error-bound" in check(b, style(b), accumulate="bf16").classes(), style.__name__


@pytest.mark.parametrize("case", ["causal", "random", "fnuz", "e5m2"])
@pytest.mark.parametrize("style", [numpy_styles.vllm_bf16, numpy_styles.vllm_rocm_bf16])
def test_bf16_fallbacks_are_bf16_not_fp32(bundles, case, style):
    b = load_bundle(bundles(case))
    logits = style(b)
    assert check(b, logits, accumulate="bf16").passed
    assert check(b, logits, accumulate="fp32").classes() == {"error-bound"}


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["fp32_einsum", "deepgemm_test", "vllm_bf16", "vllm_rocm_bf16"])
@pytest.mark.parametrize("case", ["causal", "random", "nan-codes", "negative-k-scale"])
def test_torch_styles_on_the_gpu_agree_with_their_twins(bundles, name, case):
    """The same verdicts under fp32 and bf16 contracts for the torch original and its NumPy twin."""
    gpu = load_bundle(bundles(case), device="cuda")
    host = load_bundle(bundles(case))
    original = getattr(torch_styles, name)(gpu)
    twin = getattr(numpy_styles, name)(host)
    for accumulate in ("fp32", "bf16"):
        a, b = check(host, original, accumulate=accumulate), check(host, twin, accumulate=accumulate)
        assert a.classes() == b.classes(), (accumulate, a.message(), b.message())
