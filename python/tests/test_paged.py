"""Paged decode bundles and conventions: the cache, its block table and lengths as
NumPy arrays, DeepGEMM's fused view, the two library signatures of fp8_paged_mqa_logits with our
NumPy kernels behind them (no GPU, DeepGEMM or AITER here), DeepGEMM's schedule metadata, and a
planted bug caught through a convention."""
import sys

import numpy as np
import pytest

import numpy_kernels
from conftest import python_env, quick_cases
from host import Adapter
from mqacheck import BundleError, Fp8Codes, Unsupported, check, launch, load_bundle
from mqacheck.conventions import convention_named
from mqacheck.conventions.deepgemm_paged import schedule_metadata

PAGED = quick_cases("paged")
ONE_D = [c for c in PAGED if c != "paged-2d"]


def test_quick_has_paged_cases_of_both_forms():
    assert {"paged", "paged-2d", "paged-dont-care"} <= set(PAGED)
    assert not set(PAGED) & set(quick_cases("prefill"))


def test_reads_the_cache_table_and_lengths(bundles):
    path = bundles("paged")
    b = load_bundle(path)
    assert b.operation == "paged" and b.k is None and b.k_scale is None and b.k_codes is None
    p = b.paged
    assert (p.batch, p.next_n, p.block_kv, p.page_bytes, p.context_lens_2d) == (4, 2, 64, 64 * 68, False)
    assert b.kv_cache.shape == (p.num_blocks, p.page_bytes) and b.kv_cache.dtype == np.uint8
    assert b.block_table.shape == (4, p.max_blocks) and b.context_lens.tolist() == [0, 128, 100, 333]
    for name in ("kv_cache", "block_table", "context_lens", "q", "weights", "ks", "ke"):
        np.testing.assert_array_equal(np.asarray(getattr(b, name)), np.load(path / f"{name}.npy"))
    # row b * next_n + t sees [0, L - next_n + t + 1)
    assert b.ke.tolist() == [0, 0, 127, 128, 99, 100, 332, 333] and not b.ks.any()
    with pytest.raises(BundleError, match="paged decode: its keys are in kv_cache"):
        b.k_values


def test_two_d_lengths_and_padded_pages(bundles):
    b = load_bundle(bundles("paged-2d"))
    assert b.context_lens.shape == (3, 3) and b.paged.page_bytes == 2400
    np.testing.assert_array_equal(b.ke, b.context_lens.reshape(-1))
    assert (b.context_lens[:, :-1] <= b.context_lens[:, -1:]).all()


def test_fused_view_and_gathered_keys(bundles):
    b = load_bundle(bundles("paged-2d"))
    p, d = b.paged, b.head_dim
    view = b.kv_cache_view()
    assert view.shape == (p.num_blocks, p.block_kv, 1, d + 4) and view.strides == (p.page_bytes, d + 4, d + 4, 1)
    np.testing.assert_array_equal(view[5].reshape(-1), b.kv_cache[5, : p.block_kv * (d + 4)])
    codes, scales = b.gather_keys(1)
    count = int(b.context_lens[1].max())
    assert isinstance(codes, Fp8Codes) and codes.shape == (count, d) and scales.shape == (count,)
    j = count - 1  # the last key, by hand: slot j % block_kv of page block_table[1, j // block_kv]
    page = b.kv_cache[b.block_table[1, j // p.block_kv]]
    slot = j % p.block_kv
    np.testing.assert_array_equal(codes[j], page[slot * d:(slot + 1) * d])
    assert scales[j] == page[p.block_kv * d + 4 * slot: p.block_kv * d + 4 * slot + 4].view("<f4")[0]
    with pytest.raises(BundleError, match="for paged decode cases; case 'causal' is prefill"):
        load_bundle(bundles("causal")).gather_keys(0)


def test_schedule_metadata_as_deepgemm_computes_it():
    # 1-D lengths: 300 -> 2 tasks of 256, 0 -> 0, 700 -> 3, 256 -> 1; 6 tasks over 4 SMs: 2, 2, 1, 1.
    got = schedule_metadata(np.array([300, 0, 700, 256], dtype=np.int32), num_sms=4)
    assert got.tolist() == [[0, 0], [2, 0], [2, 2], [3, 0], [4, 0]]
    # 2-D: each request's last row decides its tasks.
    two_d = schedule_metadata(np.array([[5, 300], [900, 0]], dtype=np.int32), num_sms=2)
    assert two_d.tolist() == [[0, 0], [0, 1], [2, 0]]
    # Fewer tasks than SMs: the idle ones start (and end) past the last request.
    assert schedule_metadata(np.array([10], dtype=np.int32), num_sms=3).tolist() == [[0, 0], [1, 0], [1, 0], [1, 0]]


@pytest.mark.parametrize("case", PAGED)
@pytest.mark.parametrize("name, fn", [("deepgemm-paged", numpy_kernels.deepgemm_fp8_paged_mqa_logits),
                                      ("bundle", numpy_kernels.paged_fp32_kernel)])
def test_paged_conventions_pass(bundles, name, fn, case):
    b = load_bundle(bundles(case))
    result = launch(convention_named(name).wrap(fn), b)
    assert result.logits.shape == (b.m, b.n)
    judgement = check(b, result.logits, accumulate="fp32")
    assert judgement.passed, judgement.message()


@pytest.mark.parametrize("case", ONE_D)
def test_aiter_paged_convention_passes(bundles, case):
    b = load_bundle(bundles(case))
    judgement = check(b, launch(convention_named("aiter-paged").wrap(numpy_kernels.aiter_fp8_paged_mqa_logits), b).logits,
                      accumulate="fp32")
    assert judgement.passed, judgement.message()


def test_aiter_paged_refuses_2d_context_lengths(bundles):
    """AITER's kernel reads context_lens as [batch]: a case of [batch, next_n] lengths is not one it
    takes (Unsupported), rather than handed over to be misread."""
    b = load_bundle(bundles("paged-2d"))
    assert b.paged.context_lens_2d
    with pytest.raises(Unsupported, match=r"context_lens \[batch\]"):
        launch(convention_named("aiter-paged").wrap(numpy_kernels.aiter_fp8_paged_mqa_logits), b)


def test_deepgemm_paged_gets_the_schedule_and_clean_logits(bundles, monkeypatch):
    monkeypatch.setenv("MQACHECK_NUM_SMS", "8")
    seen = {}

    def spy(q, kv_cache, weights, context_lens, block_table, schedule, max_context_len, clean_logits=False):
        seen.update(q=q.shape, kv=kv_cache.shape, schedule=schedule, n=max_context_len, clean=clean_logits)
        return numpy_kernels.deepgemm_fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule,
                                                            max_context_len, clean_logits)

    b = load_bundle(bundles("paged-dont-care"))
    launch(convention_named("deepgemm-paged").wrap(spy), b)
    assert seen["q"] == (6, 1, 8, 64) and seen["kv"] == (b.paged.num_blocks, 16, 1, 68) and seen["n"] == 160
    assert seen["clean"] is False and seen["schedule"].shape == (9, 2)
    np.testing.assert_array_equal(seen["schedule"], schedule_metadata(b.context_lens, 8))


def test_a_planted_bug_behind_aiter_is_caught(bundles):
    """ROCm/aiter#4290 (k <= L - t): the first row of each request sees a key past its context."""
    b = load_bundle(bundles("paged"))
    logits = launch(convention_named("aiter-paged").wrap(numpy_kernels.aiter_paged_without_next_n), b).logits
    assert check(b, logits, accumulate="fp32").classes() & {"mask-leak", "mask-shift"}


def test_conventions_refuse_the_other_operation(bundles):
    with pytest.raises(ValueError, match="case 'paged' is paged but the deepgemm convention calls the prefill"):
        launch(convention_named("deepgemm").wrap(numpy_kernels.deepgemm_fp8_mqa_logits), load_bundle(bundles("paged")))
    with pytest.raises(ValueError, match="case 'causal' is prefill but the aiter-paged convention calls the paged"):
        launch(convention_named("aiter-paged").wrap(numpy_kernels.aiter_fp8_paged_mqa_logits),
               load_bundle(bundles("causal")))


def test_served_by_the_adapter_command(bundles, tmp_path):
    argv = [sys.executable, "-m", "mqacheck.adapter", "--convention", "aiter-paged", "--device", "numpy",
            "--function", "numpy_kernels:aiter_fp8_paged_mqa_logits"]
    with Adapter(argv, python_env()) as a:
        response = a.request(bundles("paged"), tmp_path / "out.npy", shape=(8, 400 + 64))
    assert response["ok"], response
    assert check(bundles("paged"), np.load(tmp_path / "out.npy"), accumulate="fp32").passed


@pytest.mark.torch
def test_torch_tensors_and_the_strided_cache(bundles):
    import torch
    b = load_bundle(bundles("paged"), device="cpu")
    assert b.q.dtype == torch.float8_e4m3fn and b.kv_cache.dtype == torch.uint8
    view = b.kv_cache_view()
    assert view.shape == (b.paged.num_blocks, 64, 1, 68) and view.stride() == (64 * 68, 68, 68, 1)
    host = load_bundle(bundles("paged"))
    np.testing.assert_array_equal(view.numpy(), host.kv_cache_view())


@pytest.mark.parametrize("case", ONE_D)
def test_deepgemm_itself_gets_two_d_lengths_of_the_same_windows(bundles, monkeypatch, case):
    """DeepGEMM's own function is given a 1-D case's lengths in the 2-D form (at 54e2261 its schedule
    helper asserts context_lens.dim() == 2, and the kernel takes the form the schedule was made from),
    with clean_logits false (it cleans only rows of 1-D lengths); the windows are the same, so the
    output passes under dont-care masking. Any other function keeps the bundle's 1-D lengths."""
    import types
    monkeypatch.setenv("MQACHECK_NUM_SMS", "8")
    seen = {}

    def fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule, max_context_len,
                             clean_logits=False):
        seen["lens"], seen["clean"] = np.asarray(context_lens), clean_logits
        return numpy_kernels.deepgemm_fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule,
                                                            max_context_len, clean_logits)

    def get_paged_mqa_logits_metadata(lens, block_kv, num_sms):
        seen["schedule_lens"] = np.asarray(lens)
        return schedule_metadata(np.asarray(lens), num_sms)

    fake = types.ModuleType("deep_gemm")
    fake.fp8_paged_mqa_logits = fp8_paged_mqa_logits
    fake.get_paged_mqa_logits_metadata = get_paged_mqa_logits_metadata
    monkeypatch.setitem(sys.modules, "deep_gemm", fake)
    b = load_bundle(bundles(case))
    assert b.context_lens.ndim == 1
    logits = launch(convention_named("deepgemm-paged").wrap(fp8_paged_mqa_logits), b).logits
    next_n = b.paged.next_n
    assert seen["lens"].shape == (b.paged.batch, next_n) and seen["schedule_lens"].shape == (b.paged.batch, next_n)
    np.testing.assert_array_equal(seen["lens"][:, -1], b.context_lens)  # the last token sees the whole context
    assert seen["clean"] is False  # DeepGEMM cleans only rows of 1-D lengths
    judgement = check(b, logits, accumulate="fp32", mask="dont-care")
    assert judgement.passed, judgement.message()

    def another_library(q, kv_cache, weights, context_lens, *rest, **kwargs):
        seen["other"] = np.asarray(context_lens)
        return numpy_kernels.deepgemm_fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, *rest, **kwargs)

    launch(convention_named("deepgemm-paged").wrap(another_library), b)
    np.testing.assert_array_equal(seen["other"], b.context_lens)


@pytest.mark.parametrize("case", PAGED)
def test_deepgemm_current_paged_api_gets_two_d_lengths_and_passes_under_dont_care(bundles, case):
    """fp8_fp4_paged_mqa_logits (DeepGEMM 54e2261): (q, None), 2-D lengths whatever the case's
    form, clean_logits false; the windows are the case's, so the output passes under dont-care."""
    b = load_bundle(bundles(case))
    result = launch(convention_named("deepgemm-fp4-paged").wrap(numpy_kernels.deepgemm_fp8_fp4_paged_mqa_logits), b)
    judgement = check(b, result.logits, accumulate="fp32", mask="dont-care")
    assert judgement.passed, judgement.message()
    with pytest.raises(ValueError, match="DeepGEMM asserts context_lens.dim"):
        numpy_kernels.deepgemm_fp8_fp4_paged_mqa_logits((b.q.reshape(b.paged.batch, b.paged.next_n, b.heads, b.head_dim),
                                                         None), b.kv_cache_view(), b.weights,
                                                        np.asarray(b.context_lens).reshape(-1), b.block_table,
                                                        np.zeros((9, 2), np.int32), b.n)
