"""check(): `mqacheck check` from Python, pass, fail and bad input, and the failure message, each
judged in process and through the binary."""
import numpy as np
import pytest

import numpy_kernels
from mqacheck import MqacheckInputError, check, load_bundle
from mqacheck.binary import BinaryNotFound, find_binary
from mqacheck.contract import contract_flags

# Every judgement here is asked for both ways: in process (mqacheck._core) and through the binary.
pytestmark = pytest.mark.usefixtures("both_judges")


def test_reference_passes_exact(bundles):
    b = load_bundle(bundles("random"))
    j = check(b, b.reference, accumulate="exact")
    assert j.passed and j.findings == [] and j.metrics["ulp"]["max"] == 0 and j.case == "random"
    assert "dot exact" in j.contract


def test_fp32_kernel_passes_fp32_but_not_exact(bundles):
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.fp32_kernel(b)
    assert check(b.path, logits, accumulate="fp32").passed  # a path works as well as a Bundle
    # The session generated the bundle: its digest may stand for the reference.
    assert check(b, logits, accumulate="fp32", trust_digest=True).passed
    j = check(b, logits, accumulate="exact")
    assert not j.passed and j.classes() == {"error-bound"}


def test_planted_bug_is_found_with_coordinates(bundles):
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.inclusive_end_kernel(b)
    j = check(b, logits, accumulate="fp32")
    assert j.verdict == "fail" and "mask-shift" in j.classes()
    shift = next(f for f in j.findings if f.class_ == "mask-shift")
    i, jj = shift.first
    assert jj == b.ke[i] and shift.expected == "-inf" and shift.expected_bits == "0xFF800000"
    message = j.message()
    assert "FAIL on case 'causal'" in message and f"mask-shift x{shift.count} first at ({i}, {jj})" in message
    assert "expected -inf (0xFF800000)" in message and "window end shifted" in message
    # The diagnosis names the bug (mqacheck's model reproduces it) and the message shows it.
    assert shift.cause == "inclusive-end" and "diagnosis: matches a window end read as inclusive" in message
    with pytest.raises(AssertionError, match="mask-shift"):
        j.assert_pass()


def test_message_headlines_the_ulps_of_the_magnitude(bundles):
    """ULPs of A and the well-conditioned raw ULPs come first, the raw ULPs of every element after,
    labelled raw; each figure is the judgement's own."""
    b = load_bundle(bundles("causal"))
    j = check(b, numpy_kernels.fp32_kernel(b), accumulate="fp32")
    lines = j.message().splitlines()
    a, conditioned = j.metrics["magnitude_ulp"], j.metrics["conditioned_ulp"]
    assert lines[1] == (f"ULPs of A: p50 {a['p50']:.4g}, p99 {a['p99']:.4g}, p99.9 {a['p999']:.4g}, max {a['max']:.4g}")
    assert lines[2] == (f"Well conditioned ({conditioned['share']:.4g} of compared): p99 {conditioned['p99']} ULP, "
                        f"max {conditioned['max']} ULP")
    assert lines[3].startswith(f"Raw max ULP {j.metrics['ulp']['max']}, p99 {j.metrics['ulp']['p99']};")
    # fp32 head sums never stray a whole ULP of A, while a cancelling element is many raw ULPs off
    assert a["max"] < 1 <= j.metrics["ulp"]["max"]


def test_repeat_judges_determinism(bundles):
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.fp32_kernel(b)
    assert check(b, logits, repeat=logits.copy()).passed
    other = logits.copy()
    i, j = np.argwhere(b.window_mask())[5]
    other[i, j] = np.nextafter(other[i, j], np.float32(np.inf))
    verdict = check(b, logits, repeat=other)
    assert verdict.classes() == {"nondeterministic"} and verdict.findings[0].first == (i, j)


def test_padded_logits_and_contract_words(bundles):
    b = load_bundle(bundles("dont-care"))
    zero_outside = np.where(b.window_mask(), numpy_kernels.fp32_kernel(b), np.float32(0))
    assert check(b, zero_outside).passed  # the case's clean_logits = false
    assert "mask-leak" in check(b, zero_outside, mask="clean").classes()
    assert check(b, numpy_kernels.padded_kernel(b), relu="keeps-nan", threads=1).passed


def test_bad_input_raises_with_mqachecks_message(bundles):
    b = load_bundle(bundles("causal"))
    with pytest.raises(MqacheckInputError, match=r"expected float32 \[32, S\] with S >= 150.*found float32 \[32, 149\]"):
        check(b, numpy_kernels.fp32_kernel(b)[:, :149])
    with pytest.raises(MqacheckInputError, match=r"--accumulate 'fp33' is not known \(accepted: exact, fp32"):
        check(b, numpy_kernels.fp32_kernel(b), accumulate="fp33")
    with pytest.raises(MqacheckInputError, match=r"--no-such-flag"):
        check(b, numpy_kernels.fp32_kernel(b), no_such_flag="x")
    with pytest.raises(TypeError, match="float32 logits are expected"):
        check(b, np.zeros((32, 150), dtype=np.int32))


def test_contract_flags_are_generic():
    assert contract_flags(accumulate="fp32", relu="fmax") == ["--accumulate", "fp32", "--relu", "fmax"]
    assert contract_flags(promote_every=4, scale="before-relu") == ["--promote-every", "4", "--scale", "before-relu"]
    assert contract_flags(flag=True, off=False, unset=None) == ["--flag"]


def test_binary_lookup(monkeypatch, tmp_path, binary):
    monkeypatch.setenv("MQACHECK", str(tmp_path / "nothing"))
    with pytest.raises(BinaryNotFound, match="MQACHECK names .*nothing.*not an executable"):
        find_binary()
    monkeypatch.delenv("MQACHECK")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BinaryNotFound, match="not on PATH and MQACHECK is not set"):
        find_binary()
    assert find_binary(binary) == binary
