"""DeepGEMM judged in its own process through the pytest plugin (mqacheck._core), and each output
judged again through the `mqacheck check` binary: the same verdict and findings both ways, for the
library's kernel (which passes) and for a planted bug (caught with its class). ci/real_libraries.sh
(the run `in-process`) runs it on the nightly suite:

    MQACHECK_CORE=build/python/mqacheck/_core...so PYTHONPATH=python:tests/gpu/real_libraries:DEEPGEMM \\
        python3 -m pytest -p mqacheck.pytest_plugin tests/gpu/real_libraries/test_in_process.py \\
        --mqa-suite cases/nightly.toml --mqa-binary build/mqacheck
"""
import os

import pytest

import planted
from mqacheck import check, launch, load_core
from mqacheck import core as core_module
from mqacheck.conventions import convention_named

CONTRACT = {"accumulate": "sm90-wgmma", "relu": "fmax"}  # DeepGEMM's honest contract on sm90


@pytest.fixture(scope="session", autouse=True)
def extension():
    assert os.environ.get("MQACHECK_CORE"), "MQACHECK_CORE must name the extension this test judges through"
    assert load_core() is not None


def same_both_ways(mqa_case, fn):
    """fn's output judged in process and through the binary: the two documents, less the logits' name."""
    bundle = mqa_case.bundle("cuda")
    if bundle.operation != "prefill":
        pytest.skip(f"case '{mqa_case.name}' is {bundle.operation}; DeepGEMM's fp8_mqa_logits computes prefill")
    try:
        logits = launch(convention_named("deepgemm").wrap(fn), bundle).output  # on the GPU
    except Exception as e:  # noqa: BLE001: the convention's own refusal (heads, formats)
        if type(e).__name__ == "Unsupported":
            pytest.skip(str(e))
        raise
    here = check(bundle, logits, in_process=True, trust_digest=True, **CONTRACT)
    judged_on = next(reversed(core_module._open.values())).judged_on
    there = check(bundle, logits, in_process=False, trust_digest=True, binary=mqa_case._bundles.binary, **CONTRACT)
    strip = lambda d: {k: v for k, v in d.items() if k != "logits"}  # noqa: E731
    assert strip(here.raw) == strip(there.raw)
    # The extension judges a GPU's float32 output on the device unless it shows a finding.
    assert judged_on == "device" if here.passed else judged_on.startswith("host: ")
    print(f"{mqa_case.name}: {here.verdict}, judged on {judged_on}")
    return here


def test_deepgemm_passes_in_process(mqa_case):
    import deep_gemm
    judgement = mqa_case.judge(deep_gemm.fp8_mqa_logits, device="cuda", convention="deepgemm", **CONTRACT)
    assert judgement.passed
    assert same_both_ways(mqa_case, deep_gemm.fp8_mqa_logits).passed


def test_a_planted_bug_is_caught_in_process(mqa_case):
    judgement = same_both_ways(mqa_case, planted.inclusive_end)
    assert not judgement.passed and [f.class_ for f in judgement.findings][:1] == ["mask-shift"]
