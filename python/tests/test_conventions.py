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
          "vllm": numpy_kernels.vllm_fp8_mqa_logits_gfx942, "bundle": numpy_kernels.fp32_kernel,
          "deepgemm-fp4": numpy_kernels.deepgemm_fp8_fp4_mqa_logits, "vllm-rocm": numpy_kernels.vllm_rocm_fp8_mqa_logits,
          "flydsl": numpy_kernels.flydsl_fp8_mqa_logits}
# What a library's own asserts refuse: answered Unsupported (skipped by `run --kernel`), never called.
REFUSED = {("flydsl", "e5m2")}
CASES = ["causal", "random", "explicit-out-of-range", "dont-care", "fnuz", "e5m2"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", list(BEHIND))
def test_convention_passes(bundles, name, case):
    b = load_bundle(bundles(case))
    if (name, case) in REFUSED:
        with pytest.raises(Unsupported, match="takes q_format in"):
            launch(convention_named(name).wrap(BEHIND[name]), b)
        return
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
    for arch in ("sm100", "sm103"):  # Blackwell's kernels take 8 and 16 heads too, still e4m3fn only
        case = SimpleNamespace(heads=8, head_dim=128, q_format=fmt, k_format=fmt)
        assert deepgemm.why_unsupported(case, arch) is None
        case.heads = 128
        assert deepgemm.why_unsupported(case, arch).startswith("heads 128:")


@pytest.mark.parametrize("case", ["causal", "random", "dont-care", "explicit-out-of-range", "packed"])
@pytest.mark.parametrize("variant", ["-relative", "-bf16", "-relative-bf16"])
def test_deepgemm_fp4_output_forms_pass_with_their_contract(bundles, variant, case):
    """Each variant's output, judged with the contract flags its docstring names, passes; the
    relative ones are [m, longest window] (narrower than n: judged as it is, not through launch,
    which takes [m, S >= n]) and the bf16 ones bfloat16 bits."""
    from mqacheck.conventions import deepgemm_fp4
    b = load_bundle(bundles(case))
    relative, bf16 = deepgemm_fp4.VARIANTS[variant]
    calls = []

    def library(*args, **kwargs):
        calls.append(kwargs)
        return numpy_kernels.deepgemm_fp8_fp4_mqa_logits(*args, **kwargs)

    logits = convention_named("deepgemm-fp4" + variant).wrap(library)(b)
    span = max(1, int((np.minimum(b.ke, b.n) - b.ks).max()))
    assert calls == [{"clean_logits": False if relative else b.clean_logits, "max_seqlen_k": span if relative else 0,
                      "logits_dtype": "bfloat16" if bf16 else "float32"}]
    assert logits.shape == (b.m, span if relative else b.n) and logits.dtype == (np.uint16 if bf16 else np.float32)
    judgement = check(b, logits, accumulate="fp32", **deepgemm_fp4.contract_for(relative, bf16))
    assert judgement.passed, judgement.message()


def test_deepgemm_fp4_relative_columns_judged_as_absolute_fail(bundles):
    """The contract flag matters: relative output judged without --columns relative fails (a case
    whose windows do not all start at 0, so the columns differ), as does bf16 judged as float32."""
    b = load_bundle(bundles("random"))
    wide = convention_named("deepgemm-fp4-relative").wrap(numpy_kernels.deepgemm_fp8_fp4_mqa_logits)(b)
    padded = np.full((b.m, max(b.n, wide.shape[1])), np.float32(-np.inf))
    padded[:, : wide.shape[1]] = wide
    assert not check(b, padded, accumulate="fp32", mask="dont-care").passed
    bits = convention_named("deepgemm-fp4-bf16").wrap(numpy_kernels.deepgemm_fp8_fp4_mqa_logits)(b)
    assert check(b, bits, accumulate="fp32", logits_dtype="bf16").passed
    with pytest.raises(TypeError, match="float32 logits are expected"):
        check(b, bits, accumulate="fp32")


@pytest.mark.parametrize("case", ["causal", "random"])
def test_deepgemm_fp4_relative_column_shift_is_caught(bundles, case):
    """A planted bug: relative column c holding key ks[i] + c + 1."""
    from functools import partial
    b = load_bundle(bundles(case))
    shifted = partial(numpy_kernels.deepgemm_fp8_fp4_mqa_logits, column_shift=1)
    logits = convention_named("deepgemm-fp4-relative").wrap(shifted)(b)
    judgement = check(b, logits, accumulate="fp32", columns="relative")
    assert not judgement.passed and "error-bound" in judgement.message()


def test_deepgemm_fp4_bf16_truncation_is_caught(bundles):
    """A planted bug: bfloat16 logits truncated, not rounded to nearest even."""
    from functools import partial
    b = load_bundle(bundles("random"))
    truncated = partial(numpy_kernels.deepgemm_fp8_fp4_mqa_logits, bf16_truncates=True)
    bits = convention_named("deepgemm-fp4-bf16").wrap(truncated)(b)
    judgement = check(b, bits, accumulate="fp32", logits_dtype="bf16")
    assert not judgement.passed and "error-bound" in judgement.message()


def test_deepgemm_fp4_declares_its_limits_and_refuses_before_calling(bundles, monkeypatch):
    """DeepGEMM 54e2261 takes 32 or 64 heads on sm90 and 8 to 64 on sm100, fp4 only on sm100, no
    other architecture (conventions/deepgemm_fp4.py LIMITS): refused before the library is called."""
    from types import SimpleNamespace

    from mqacheck.conventions import deepgemm_fp4
    calls = []

    def library(*args, **kwargs):
        calls.append(args)
        return numpy_kernels.deepgemm_fp8_fp4_mqa_logits(*args, **kwargs)

    b = load_bundle(bundles("causal"))  # 8 heads, e4m3fn
    assert launch(convention_named("deepgemm-fp4").wrap(library), b).logits.shape == (32, 150) and len(calls) == 1
    monkeypatch.setattr(deepgemm_fp4, "architecture", lambda bundle: "sm90")
    with pytest.raises(Unsupported, match=r"^heads 8: DeepGEMM's fp8_fp4_mqa_logits \(fp8\) on sm90 takes heads in "
                                          r"\{32, 64\}$"):
        launch(convention_named("deepgemm-fp4").wrap(library), b)
    monkeypatch.setattr(deepgemm_fp4, "architecture", lambda bundle: "sm120")
    with pytest.raises(Unsupported, match=r"runs on sm90, sm100, not sm120$"):
        launch(convention_named("deepgemm-fp4-relative").wrap(library), b)
    monkeypatch.setattr(deepgemm_fp4, "architecture", lambda bundle: "sm103")  # sm100's family: 8 heads taken
    assert launch(convention_named("deepgemm-fp4").wrap(library), b).logits.shape == (32, 150)
    assert len(calls) == 2  # the refused ones never reached the library

    def case(heads, head_dim, q_format, k_format=None):
        return SimpleNamespace(heads=heads, head_dim=head_dim, q_format=SimpleNamespace(name=q_format),
                               k_format=SimpleNamespace(name=k_format or q_format))

    for arch, c, why in (("sm90", case(64, 128, "e4m3fn"), None), ("sm90", case(16, 64, "e4m3fn"), "heads 16"),
                         ("sm90", case(64, 96, "e4m3fn"), "head_dim 96"),
                         ("sm90", case(64, 128, "e4m3fnuz"), "q_format e4m3fnuz"),
                         ("sm90", case(64, 128, "e2m1fn"), "fp4"), ("sm100", case(8, 32, "e4m3fn"), None),
                         ("sm100", case(128, 64, "e4m3fn"), "heads 128"), ("sm100", case(16, 128, "e2m1fn"), None),
                         ("sm100", case(16, 32, "e2m1fn"), "head_dim 32"),
                         ("sm100", case(16, 64, "e4m3fn", "e5m2"), "k_format e5m2")):
        got = deepgemm_fp4.why_unsupported(c, arch)
        assert (got is None) if why is None else got.startswith(why + ":"), (arch, c, got)
    assert deepgemm_fp4.why_unsupported(case(128, 96, "e2m1fn"), None) is None


def test_deepgemm_fp4_refuses_fp4_cases_it_cannot_convert():
    """fp4 bundles are not loaded by the package: an fp4 case is Unsupported, not guessed at."""
    from types import SimpleNamespace
    fp4 = SimpleNamespace(name="fp4-case", operation="prefill", device=None, heads=16, head_dim=128,
                          q_format=SimpleNamespace(name="e2m1fn"), k_format=SimpleNamespace(name="e2m1fn"))
    with pytest.raises(Unsupported, match="does not load fp4 bundles"):
        convention_named("deepgemm-fp4").wrap(numpy_kernels.deepgemm_fp8_fp4_mqa_logits)(fp4)


def test_vllm_passes_scales_as_a_column_and_aiter_as_a_vector(bundles):
    b = load_bundle(bundles("causal"))
    with pytest.raises(ValueError, match=r"kv_scales has shape \(150, 1\); AITER takes \[N\]"):
        launch(convention_named("vllm").wrap(numpy_kernels.aiter_fp8_mqa_logits), b)
    with pytest.raises(ValueError, match=r"kv_scales has shape \(150,\); vLLM's caller passes \[N, 1\]"):
        launch(convention_named("aiter").wrap(numpy_kernels.vllm_fp8_mqa_logits_gfx942), b)


@pytest.mark.parametrize("name", ["deepgemm", "aiter", "vllm", "deepgemm-fp4", "vllm-rocm", "flydsl"])
def test_served_by_the_adapter_command(bundles, tmp_path, name):
    function = {"deepgemm": "deepgemm_fp8_mqa_logits", "aiter": "aiter_fp8_mqa_logits",
                "vllm": "vllm_fp8_mqa_logits_gfx942", "deepgemm-fp4": "deepgemm_fp8_fp4_mqa_logits",
                "vllm-rocm": "vllm_rocm_fp8_mqa_logits", "flydsl": "flydsl_fp8_mqa_logits"}[name]
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
    with pytest.raises(ValueError, match="convention 'triton' is not known .*deepgemm, aiter, vllm, vllm-rocm, flydsl, deepgemm-paged"):
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


def test_flydsl_gets_the_cases_clean_logits_and_refuses_what_its_asserts_refuse(bundles):
    """FlyDSL's wrapper leaves out-of-window positions as its allocation held them unless
    clean_logits: the case's own flag is passed, so a dont-care case is judged under dont-care."""
    seen = []

    def spy(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits=True):
        seen.append(clean_logits)
        return numpy_kernels.flydsl_fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits)

    for case in ("dont-care", "causal"):
        b = load_bundle(bundles(case))
        assert check(b, launch(convention_named("flydsl").wrap(spy), b).logits, accumulate="fp32").passed
    assert seen == [False, True]
    b = load_bundle(bundles("causal"))
    with pytest.raises(ValueError, match=r"kv_scales has shape \(150, 1\); FlyDSL takes \[N\]"):
        launch(convention_named("vllm").wrap(numpy_kernels.flydsl_fp8_mqa_logits), b)


def test_vllm_rocm_passes_k_and_its_scales_as_one_argument(bundles):
    b = load_bundle(bundles("causal"))
    with pytest.raises(TypeError):  # DeepGEMM's (k, scale) pair but a [N, 1] scale: not AITER's positional form
        launch(convention_named("vllm-rocm").wrap(numpy_kernels.aiter_fp8_mqa_logits), b)
    with pytest.raises(ValueError, match=r"k_scale has shape \(150,\); vLLM's indexer passes \[N, 1\]"):
        launch(convention_named("deepgemm").wrap(lambda q, kv, w, ks, ke, clean_logits=True:
                                                 numpy_kernels.vllm_rocm_fp8_mqa_logits(q, kv, w, ks, ke)), b)
