"""The whole indexer as one kernel: a logits function and a top-k function served together
(``python3 -m mqacheck.adapter ... --topk-convention``) and judged in one ``mqacheck run --kernel
--topk-indices`` run, with NumPy kernels behind each top-k convention (numpy_kernels.py).

What it must show: the correct indexer passes cases/quick.toml in each convention, with the
decidedness figures in its report; a top-k with a planted bug is caught with its class; misuse of
the adapter's flags is refused before serving."""
import json
import shlex
import subprocess
import sys

import pytest

from conftest import QUICK, ROOT, python_env
from mqacheck import Decidedness, Judgement
from mqacheck.conventions.topk import TOPK_CONVENTIONS

BUG_SUITE = ROOT / "cases" / "bugs" / "32-topk-indices.toml"


def run_indexer(binary, tmp_path, topk_convention, topk_function, *extra, cases=QUICK, logits="fp32_kernel"):
    convention = TOPK_CONVENTIONS[topk_convention]
    adapter = shlex.join([sys.executable, "-m", "mqacheck.adapter", "--function", f"numpy_kernels:{logits}",
                          "--topk-convention", topk_convention, "--topk-function", f"numpy_kernels:{topk_function}"])
    done = subprocess.run([binary, "run", "--cases", str(cases), "--kernel", adapter, "--accumulate", "fp32",
                           "--timing-launches", "0", "--out", str(tmp_path), *convention.flags(), *extra],
                          capture_output=True, text=True, env=python_env(), timeout=600)
    report = json.loads((tmp_path / "report.json").read_text()) if (tmp_path / "report.json").exists() else None
    return done, report


@pytest.mark.parametrize("convention, function", [("torch-topk", "numpy_topk"),
                                                  ("vllm-prefill", "top_k_per_row_prefill")])
def test_correct_indexer_passes_quick_with_decidedness(binary, tmp_path, convention, function):
    done, report = run_indexer(binary, tmp_path, convention, function, "--operation", "prefill")
    assert done.returncode == 0, done.stdout + done.stderr
    results = report["results"]
    assert len(results) >= 10 and all(r["outcome"] == "pass" for r in results), results
    figures = [Decidedness.from_json(r["metrics"]["topk_decidedness"]) for r in results]
    decided = [d for d in figures if d is not None]
    assert decided and all(d.rows > 0 and 0 <= d.rows_fully_decided <= d.rows for d in decided)
    assert any(d.must_keep > 0 for d in decided)


def test_decode_convention_takes_windows_from_zero_and_skips_the_rest(binary, tmp_path):
    done, report = run_indexer(binary, tmp_path, "vllm-decode", "top_k_per_row_decode", "--operation", "prefill")
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["results"] and all(r["outcome"] == "pass" for r in report["results"])
    assert any("windows starting at key 0" in s["reason"] for s in report["skipped"]), report["skipped"]


@pytest.mark.parametrize("convention, function, finding", [
    ("torch-topk", "numpy_topk_nan_lowest", "topk-inadmissible"),
    ("vllm-prefill", "top_k_per_row_prefill_unpadded", "topk-padding"),
])
def test_planted_top_k_bug_is_caught_with_its_class(binary, tmp_path, convention, function, finding):
    done, report = run_indexer(binary, tmp_path, convention, function, "--must-produce", finding, cases=BUG_SUITE)
    assert done.returncode == 0, done.stdout + done.stderr  # caught, as --must-produce expects
    classes = {f["class"] for r in report["results"] for f in r.get("findings", [])}
    assert finding in classes, classes


def test_indices_asked_of_an_adapter_without_top_k_are_that_case_s_error(binary, tmp_path):
    adapter = shlex.join([sys.executable, "-m", "mqacheck.adapter", "--function", "numpy_kernels:fp32_kernel"])
    done = subprocess.run([binary, "run", "--cases", str(BUG_SUITE), "--kernel", adapter, "--accumulate", "fp32",
                           "--timing-launches", "0", "--topk-indices", "--out", str(tmp_path)],
                          capture_output=True, text=True, env=python_env(), timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "serves no top-k function" in done.stdout + done.stderr


def test_adapter_refuses_a_top_k_function_without_its_convention():
    done = subprocess.run([sys.executable, "-m", "mqacheck.adapter", "--function", "numpy_kernels:fp32_kernel",
                           "--topk-function", "numpy_kernels:numpy_topk"], capture_output=True, text=True,
                          env=python_env(), input="", timeout=60)
    assert done.returncode == 2 and "--topk-function needs --topk-convention" in done.stderr, done.stderr


def test_decidedness_on_the_judgement():
    doc = {"verdict": "pass", "findings": [], "metrics": {"topk_decidedness": {
        "rows": 4, "rows_fully_decided": 3, "must_keep": 10, "must_drop": 20, "ambiguous": 2,
        "median_ambiguous": 0.0, "rows_ranked": 2, "rows_ranked_fully_decided": 1, "median_ambiguous_ranked": 1.0,
        "worst": {"row": 2, "ambiguous": 2, "k": 4}}}}
    j = Judgement.from_json(doc)
    assert j.decidedness == Decidedness(4, 3, 10, 20, 2, 0.0, 2, 1, 1.0, 2, 2, 4)
    assert j.decidedness.share_fully_decided == 0.75
    assert "3/4 rows fully decided" in j.message()
    assert Judgement.from_json({"verdict": "pass", "metrics": {"topk_decidedness": None}}).decidedness is None


def test_check_judges_indices_beside_the_logits(binary, tmp_path):
    from mqacheck import MqacheckInputError, check, load_bundle
    from numpy_kernels import fp32_kernel, numpy_topk
    import numpy as np

    folder = tmp_path / "b"
    subprocess.run([binary, "gen", "--cases", str(BUG_SUITE), "--case", "random-long", "--out", str(folder)],
                   check=True, capture_output=True)
    bundle = load_bundle(folder)
    logits = fp32_kernel(bundle)
    ks, ke = np.asarray(bundle.ks, np.int64), np.asarray(bundle.ke, np.int64)
    _, chosen = numpy_topk(logits, 64)
    inside = (chosen >= ks[:, None]) & (chosen < ke[:, None])
    indices = np.where(inside, chosen, -1)
    good = check(bundle, logits, topk_indices=indices, topk_sorted=True, accumulate="fp32")
    assert good.passed, good.message()
    assert good.decidedness is not None and good.decidedness.rows > 0
    row = int(np.argmax(inside.sum(axis=1) >= 2))
    duplicated = indices.copy()
    duplicated[row, 1] = duplicated[row, 0]
    assert "topk-duplicate" in check(bundle, logits, topk_indices=duplicated, accumulate="fp32").classes()
    with pytest.raises(MqacheckInputError, match="int32 or int64") as refused:
        check(bundle, logits, topk_indices=indices.astype(np.float32), accumulate="fp32")
    assert str(refused.value).startswith("topk_indices: top-k indices must be"), str(refused.value)
    assert "mqacheck-check-" not in str(refused.value)


def test_adapter_refuses_a_top_k_convention_over_relative_logits():
    done = subprocess.run([sys.executable, "-m", "mqacheck.adapter", "--convention", "deepgemm-fp4-relative",
                           "--function", "numpy_kernels:fp32_kernel", "--topk-convention", "torch-topk",
                           "--topk-function", "numpy_kernels:numpy_topk"], capture_output=True, text=True,
                          env=python_env(), input="", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "--convention deepgemm-fp4-relative writes them relative to ks" in done.stderr, done.stderr
    assert "accepted with --topk-convention: " in done.stderr and "deepgemm-fp4," in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr  # one message


def _host_bundle(ks, ke, n):
    from types import SimpleNamespace
    import numpy as np

    ks, ke = np.asarray(ks, np.int32), np.asarray(ke, np.int32)
    return SimpleNamespace(device=None, ks=ks, ke=ke, m=len(ks), n=n)


@pytest.mark.parametrize("convention, ks, ke", [
    ("vllm-prefill", [0, -3], [4, 5]),   # a window starting before key 0
    ("vllm-prefill", [0, 1], [4, 9]),    # a window past the row's 8 columns
    ("vllm-decode", [0, 0], [4, 9]),
])
def test_vllm_conventions_refuse_windows_outside_the_row(convention, ks, ke):
    import numpy as np
    from mqacheck import Unsupported

    calls = []
    with pytest.raises(Unsupported, match="no clamp to the row's 8 columns; this case's row 1 has the window"):
        TOPK_CONVENTIONS[convention].call(lambda *a: calls.append(a), _host_bundle(ks, ke, 8),
                                          np.zeros((2, 8), np.float32), 2)
    assert not calls  # refused before the kernel ran


def test_vllm_prefill_takes_windows_inside_the_row():
    import numpy as np
    from numpy_kernels import top_k_per_row_prefill

    logits = np.array([[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0]], np.float32)
    out = TOPK_CONVENTIONS["vllm-prefill"].call(top_k_per_row_prefill, _host_bundle([0, 2], [8, 5], 8), logits, 2)
    assert out.tolist() == [[7, 6], [0, 1]]


@pytest.mark.parametrize("torch_present", [True, False])
def test_torch_topk_gets_a_cpu_tensor_from_a_numpy_bundle(monkeypatch, torch_present):
    import numpy as np
    from types import SimpleNamespace
    import mqacheck.conventions.topk as topk

    class FakeTensor:  # what torch.from_numpy returns, as far as the call goes
        def __init__(self, array):
            self.array = array

    fake_torch = SimpleNamespace(from_numpy=FakeTensor)
    monkeypatch.setattr(topk, "torch_module", lambda: fake_torch if torch_present else None)
    seen = []

    def fn(x, k, dim=-1):
        seen.append(x)
        values = x.array if isinstance(x, FakeTensor) else x
        order = np.argsort(-values, axis=-1, kind="stable")[:, :k]
        return None, order

    logits = np.array([[3, 1, 2, 0]], np.float32)
    out = TOPK_CONVENTIONS["torch-topk"].call(fn, _host_bundle([0], [4], 4), logits, 2)
    assert out.tolist() == [[0, 2]]
    assert isinstance(seen[0], FakeTensor) == torch_present, seen
