"""The library conventions of the prefill operation, each run with a NumPy kernel behind that
library's signature (none of them against the real library here: no GPU), and functions named by
module or by file. The paged decode conventions: test_paged.py."""
import sys

import numpy as np
import pytest

import numpy_kernels
from conftest import HERE, python_env
from host import Adapter
from mqacheck import Unsupported, check, launch, load_bundle
from mqacheck.conventions import CONVENTIONS, convention_named
from mqacheck.loading import FunctionSpecError, load_function

BEHIND = {"deepgemm": numpy_kernels.deepgemm_fp8_mqa_logits, "aiter": numpy_kernels.aiter_fp8_mqa_logits,
          "vllm": numpy_kernels.vllm_fp8_mqa_logits_gfx942, "bundle": numpy_kernels.fp32_kernel}
CASES = ["causal", "random", "explicit-out-of-range", "dont-care", "fnuz", "e5m2"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", list(BEHIND))
def test_convention_passes(bundles, name, case):
    b = load_bundle(bundles(case))
    result = launch(convention_named(name).wrap(BEHIND[name]), b)
    assert result.logits.shape == (b.m, b.n)
    judgement = check(b, result.logits, accumulate="fp32")
    assert judgement.passed, judgement.message()


def test_deepgemm_gets_clean_logits_from_the_case(bundles):
    seen = {}

    def spy(q, kv, weights, ks, ke, clean_logits=True):
        seen["clean_logits"] = clean_logits
        return numpy_kernels.deepgemm_fp8_mqa_logits(q, kv, weights, ks, ke, clean_logits)

    for case, clean in (("dont-care", False), ("causal", True)):
        launch(convention_named("deepgemm").wrap(spy), load_bundle(bundles(case)))
        assert seen["clean_logits"] is clean
    # a fallback without the keyword (vLLM's ROCm fp8_mqa_logits_torch) is called without it
    five = lambda q, kv, weights, ks, ke: numpy_kernels.deepgemm_fp8_mqa_logits(q, kv, weights, ks, ke)  # noqa: E731
    assert launch(convention_named("deepgemm").wrap(five), load_bundle(bundles("causal"))).logits.shape == (32, 150)


def test_deepgemm_declares_its_sm90_head_limit_and_refuses_before_calling(bundles, monkeypatch):
    """On sm90 DeepGEMM takes 32 or 64 heads (conventions/deepgemm.py LIMITS): another count is
    Unsupported, raised before the library is called; on the host (no architecture) any count goes."""
    from types import SimpleNamespace

    from mqacheck.conventions import deepgemm
    calls = []

    def library(*args, **kwargs):
        calls.append(args)
        return numpy_kernels.deepgemm_fp8_mqa_logits(*args, **kwargs)

    b = load_bundle(bundles("causal"))  # 8 heads
    assert launch(convention_named("deepgemm").wrap(library), b).logits.shape == (32, 150) and len(calls) == 1
    monkeypatch.setattr(deepgemm, "architecture", lambda bundle: "sm90")
    with pytest.raises(Unsupported, match=r"^heads 8: DeepGEMM's fp8_mqa_logits on sm90 takes heads in \{32, 64\}$"):
        launch(convention_named("deepgemm").wrap(library), b)
    assert len(calls) == 1  # refused before the call
    assert deepgemm.LIMITS["sm90"]["heads"] == (32, 64)
    fmt = SimpleNamespace(name="e4m3fn")
    for heads, head_dim, q_format, why in ((32, 64, "e4m3fn", None), (64, 128, "e4m3fn", None),
                                           (128, 64, "e4m3fn", "heads 128"), (16, 64, "e4m3fn", "heads 16"),
                                           (64, 96, "e4m3fn", "head_dim 96"), (64, 128, "e4m3fnuz", "q_format e4m3fnuz")):
        case = SimpleNamespace(heads=heads, head_dim=head_dim, q_format=SimpleNamespace(name=q_format), k_format=fmt)
        got = deepgemm.why_unsupported(case, "sm90")
        assert (got is None) if why is None else got.startswith(why + ":"), (heads, head_dim, q_format, got)
    assert deepgemm.why_unsupported(SimpleNamespace(heads=128, head_dim=96), None) is None


def test_vllm_passes_scales_as_a_column_and_aiter_as_a_vector(bundles):
    b = load_bundle(bundles("causal"))
    with pytest.raises(ValueError, match=r"kv_scales has shape \(150, 1\); AITER takes \[N\]"):
        launch(convention_named("vllm").wrap(numpy_kernels.aiter_fp8_mqa_logits), b)
    with pytest.raises(ValueError, match=r"kv_scales has shape \(150,\); vLLM's caller passes \[N, 1\]"):
        launch(convention_named("aiter").wrap(numpy_kernels.vllm_fp8_mqa_logits_gfx942), b)


@pytest.mark.parametrize("name", ["deepgemm", "aiter", "vllm"])
def test_served_by_the_adapter_command(bundles, tmp_path, name):
    function = {"deepgemm": "deepgemm_fp8_mqa_logits", "aiter": "aiter_fp8_mqa_logits",
                "vllm": "vllm_fp8_mqa_logits_gfx942"}[name]
    argv = [sys.executable, "-m", "mqacheck.adapter", "--convention", name, "--device", "numpy",
            "--function", f"numpy_kernels:{function}"]  # by module name (tests/ is on PYTHONPATH)
    with Adapter(argv, python_env()) as a:
        response = a.request(bundles("packed"), tmp_path / "out.npy", shape=(24, 120))
    assert response["ok"] and response["label"] == f"{name}:numpy_kernels:{function}", response
    assert check(bundles("packed"), np.load(tmp_path / "out.npy"), accumulate="fp32").passed


def test_library_conventions_default_to_cuda(tmp_path):
    """Without --device a library convention asks for CUDA tensors: refused cleanly where torch is absent."""
    from mqacheck.tensors import torch_module
    if torch_module() is not None:
        pytest.skip("torch is installed here: the default device is usable")
    a = Adapter([sys.executable, "-m", "mqacheck.adapter", "--convention", "aiter",
                 "--function", "numpy_kernels:aiter_fp8_mqa_logits"], python_env())
    status, out, err = a.close()
    assert status == 2 and "--device cuda needs torch" in err


def test_load_function_by_module_and_by_file():
    assert load_function("numpy_kernels:fp32_kernel") is numpy_kernels.fp32_kernel
    by_file = load_function(f"{HERE / 'numpy_kernels.py'}:fp32_kernel")
    assert by_file.__name__ == "fp32_kernel" and by_file.__module__.startswith("mqacheck_user_numpy_kernels_")
    assert load_function("mqacheck.references.numpy_styles:vllm_bf16").__name__ == "vllm_bf16"
    assert load_function("mqacheck.judgement:Judgement.from_json").__name__ == "from_json"
    with pytest.raises(FunctionSpecError, match="no attribute 'nope'"):
        load_function("numpy_kernels:nope")


def test_unknown_convention():
    with pytest.raises(ValueError, match="convention 'triton' is not known .*deepgemm, aiter, vllm, deepgemm-paged, aiter-paged"):
        convention_named("triton")


@pytest.mark.parametrize("case", ["causal", "dont-care"])
def test_aiter_gets_the_cases_clean_logits_where_it_takes_it(bundles, case):
    """AITER's wrapper gained clean_logits (ROCm/aiter@e4048607a5): the case's own is passed to a
    function that takes it, and the output judged under the case's masking; an older one without
    the keyword is called without it."""
    seen = {}

    def aiter_now(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits=True):
        seen["clean"] = clean_logits
        logits = numpy_kernels.aiter_fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends)
        if not clean_logits:  # what lies outside the windows is whatever the allocation held
            logits = np.where(np.isneginf(logits), np.float32(7.0), logits)
        return logits

    b = load_bundle(bundles(case))
    j = check(b, launch(convention_named("aiter").wrap(aiter_now), b).logits, accumulate="fp32", scale="before-relu")
    assert seen["clean"] is b.clean_logits and j.passed, j.message()
    older = launch(convention_named("aiter").wrap(numpy_kernels.aiter_fp8_mqa_logits), b).logits
    assert check(b, older, accumulate="fp32", scale="before-relu").passed
