"""mqacheck._core, the judge in this process: the same judgement as the `mqacheck check` binary on
every kind of case and output, the logits read where they lie (any row stride, no copy), bad input
refused with mqacheck's message, and an opened bundle reused until its files change. Skipped where
the build made no extension (CTest sets MQACHECK_CORE where it did)."""
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import numpy_kernels
from mqacheck import MqacheckInputError, check, load_bundle, load_core
from mqacheck import core as core_module

CORE_PATH = os.environ.get("MQACHECK_CORE")
pytestmark = pytest.mark.skipif(not CORE_PATH or CORE_PATH == "off",
                                reason="MQACHECK_CORE is not set: this build made no mqacheck._core")


@pytest.fixture()
def core():
    module = load_core()
    assert module is not None, f"MQACHECK_CORE={CORE_PATH} did not load"
    return module


def both(bundle, logits, **kw):
    """The judgement in process and through the binary, as their JSON documents."""
    here = check(bundle, logits, in_process=True, **kw).raw
    there = check(bundle, logits, in_process=False, **kw).raw
    return here, there


def same_judgement(here, there):
    """Every field but where the logits came from (a path, or "in memory")."""
    strip = lambda d: {k: v for k, v in d.items() if k != "logits"}  # noqa: E731
    assert strip(here) == strip(there)


@pytest.mark.parametrize("case, kernel, contract", [
    ("random", "reference", {"accumulate": "exact"}),
    ("causal", "fp32", {"accumulate": "fp32"}),
    ("causal", "fp32", {"accumulate": "exact"}),          # error-bound findings
    ("causal", "inclusive-end", {"accumulate": "fp32"}),  # mask-shift, diagnosed
    ("dont-care", "fp32", {}),
    ("causal", "padded", {"relu": "keeps-nan"}),
    ("fnuz", "fp32", {"accumulate": "fp32"}),
    ("nan-codes", "fp32", {"accumulate": "fp32"}),
    ("paged", "paged-fp32", {"accumulate": "fp32"}),
])
def test_same_judgement_as_the_binary(bundles, core, case, kernel, contract):
    b = load_bundle(bundles(case))
    logits = {"reference": lambda: b.reference, "fp32": lambda: numpy_kernels.fp32_kernel(b),
              "inclusive-end": lambda: numpy_kernels.inclusive_end_kernel(b),
              "padded": lambda: numpy_kernels.padded_kernel(b),
              "paged-fp32": lambda: numpy_kernels.paged_fp32_kernel(b)}[kernel]()
    here, there = both(b, logits, **contract)
    same_judgement(here, there)
    assert here["logits"] == "in memory"


def relative_columns(b, logits):
    """Row i's key ks[i] + c at column c (DeepGEMM's max_seqlen_k > 0 form), -inf past the window."""
    starts, ends = np.clip(b.ks, 0, b.n), np.clip(b.ke, 0, b.n)
    width = max(1, int((ends - starts).max()))
    out = np.full((b.m, width + 5), -np.inf, dtype=np.float32)
    for i in range(b.m):
        out[i, :max(0, ends[i] - starts[i])] = logits[i, starts[i]:ends[i]]
    return out


@pytest.mark.parametrize("kernel", ["fp32", "scaled"])
def test_relative_columns_as_the_binary(bundles, core, kernel):
    """Relative columns are remapped onto the absolute image: the same judgement both ways, a
    correct kernel passing and one 0.1% off failing."""
    b = load_bundle(bundles("sliding"))
    logits = numpy_kernels.fp32_kernel(b)
    if kernel == "scaled":
        logits = np.where(np.isfinite(logits), logits * np.float32(1.001), logits)
    here, there = both(b, relative_columns(b, logits), columns="relative", accumulate="fp32")
    same_judgement(here, there)
    assert here["verdict"] == ("pass" if kernel == "fp32" else "fail")


def test_bfloat16_logits_through_both_judges(bundles, core):
    b = load_bundle(bundles("causal"))
    here, there = both(b, bfloat16(numpy_kernels.fp32_kernel(b)), logits_dtype="bf16")
    same_judgement(here, there)
    assert here["verdict"] == "pass"


def test_other_byte_orders_are_refused_or_read_as_values(bundles, core):
    """A big-endian float32 array is converted by value (as the binary's file would hold it); its
    raw buffer given to the extension is refused, as are big-endian bfloat16 bits."""
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.inclusive_end_kernel(b)
    swapped = logits.astype(">f4")
    same_judgement(check(b, swapped, in_process=True).raw, check(b, logits, in_process=True).raw)
    with pytest.raises(core.InputError, match=r"logits: format '>f' is big-endian"):
        core.Bundle(str(b.path), [], "verify").judge(swapped)
    with pytest.raises(TypeError, match=r"not in this machine's byte order"):
        check(b, bfloat16(logits).astype(">u2"), in_process=True, logits_dtype="bf16")


def test_repeat_and_nondeterminism_as_the_binary(bundles, core):
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.fp32_kernel(b)
    other = logits.copy()
    i, j = np.argwhere(b.window_mask())[3]
    other[i, j] = np.nextafter(other[i, j], np.float32(np.inf))
    here = check(b, logits, repeat=other, in_process=True)
    there = check(b, logits, repeat=other, in_process=False)
    assert here.classes() == {"nondeterministic"} and here.findings[0].first == (i, j)
    same_judgement(here.raw, there.raw)


def test_logits_read_where_they_lie(bundles, core):
    """A view into a wider buffer (row stride > n) is judged as it is, the same as its copy."""
    b = load_bundle(bundles("causal"))
    wide = np.full((b.m, b.n + 29), np.float32(7.0))
    wide[:, :b.n] = numpy_kernels.inclusive_end_kernel(b)
    view = wide[:, :b.n]
    assert not view.flags["C_CONTIGUOUS"] and view.strides[0] == (b.n + 29) * 4
    opened = core_module.opened_bundle(core, str(b.path), ["--accumulate", "fp32"], "verify")
    judged_view = opened.judge(view)
    judged_copy = opened.judge(np.ascontiguousarray(view))
    assert judged_view == judged_copy and '"mask-shift"' in judged_view


def test_rows_that_run_backwards_or_repeat_are_judged_as_the_binary_judges_them(bundles, core):
    """An array whose rows run backwards ([::-1] of a reversed copy), or repeat one row
    (broadcast_to: a row stride of 0), is judged in process as the binary judges its .npy file;
    a negative thread count is refused by both in one wording."""
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.fp32_kernel(b)
    backwards = np.ascontiguousarray(logits[::-1])[::-1]
    assert backwards.strides[0] < 0
    here, there = both(b, backwards, accumulate="fp32")
    same_judgement(here, there)
    assert here["verdict"] == "pass"
    repeated = np.broadcast_to(logits[b.m - 1], logits.shape)
    assert repeated.strides[0] == 0
    here, there = both(b, repeated, accumulate="fp32")
    same_judgement(here, there)
    assert here["verdict"] == "fail"
    for in_process in (True, False):
        with pytest.raises(MqacheckInputError, match=r"threads=-1: expected 0 \(every core\) to 4294967295"):
            check(b, logits, in_process=in_process, threads=-1, accumulate="fp32")


def test_a_judgement_says_what_its_steps_took(bundles, core):
    """Bundle.seconds: the last judgement's steps. A host array is judged on the host: its time and
    the document's, no device step, within the whole call's; a failed judgement reports none."""
    b = load_bundle(bundles("causal"))
    opened = core.Bundle(str(b.path), ["--accumulate", "fp32"], "verify")
    assert opened.seconds == {}
    opened.judge(numpy_kernels.fp32_kernel(b))
    steps = opened.seconds
    assert set(steps) == {"host", "document", "call"} and steps["host"] > 0 and steps["document"] > 0
    assert steps["call"] >= steps["host"] + steps["document"]
    with pytest.raises(core.InputError):
        opened.judge(np.zeros((b.m, b.n + 1, 2), np.float32))
    assert opened.seconds == {}


def test_bad_input_is_mqachecks_message(bundles, core):
    b = load_bundle(bundles("causal"))
    opened = core.Bundle(str(b.path), [], "verify")
    with pytest.raises(core.InputError, match=r"logits: a 3-D float32 tensor \(accepted: 2-D float32"):
        opened.judge(np.zeros((2, b.m, b.n), np.float32))
    with pytest.raises(core.InputError, match=r"logits: a 2-D 'd' \(8-byte\) tensor"):
        opened.judge(np.zeros((b.m, b.n), np.float64))
    with pytest.raises(core.InputError, match=r"logits: columns 32 elements apart"):
        opened.judge(np.zeros((b.n, b.m), np.float32).T)
    with pytest.raises(core.InputError, match=r"logits: a list is neither a buffer nor a DLPack tensor"):
        opened.judge([[0.0]])
    with pytest.raises(core.InputError, match=r"repeat: expected the shape and dtype of logits"):
        logits = numpy_kernels.fp32_kernel(b)
        opened.judge(logits, logits[:, :-1])
    with pytest.raises(core.InputError, match=r"--accumulate 'fp33' is not known"):
        core.Bundle(str(b.path), ["--accumulate", "fp33"], "verify")
    with pytest.raises(core.InputError, match=r"contract: .*--no-such-flag"):
        core.Bundle(str(b.path), ["--no-such-flag", "x"], "verify")
    with pytest.raises(core.InputError, match=r"digest 'sometimes' is not known"):
        core.Bundle(str(b.path), [], "sometimes")


def test_a_modified_bundle_is_opened_again(bundles, core, tmp_path):
    """The opened bundle is reused while its files are unchanged; a changed file is read again and
    refused, as the binary refuses it."""
    folder = tmp_path / "b"
    shutil.copytree(bundles("causal"), folder)
    b = load_bundle(folder)
    logits = numpy_kernels.fp32_kernel(b)
    assert check(folder, logits, in_process=True).passed
    first = core_module.opened_bundle(core, str(folder), [], "verify")
    assert core_module.opened_bundle(core, str(folder), [], "verify") is first
    weights = np.load(folder / "weights.npy")
    weights[0, 0] = -weights[0, 0] + 1
    # Written in place, its size and modification time as they were (a tool that restores times):
    # the change time still says it changed.
    before = os.stat(folder / "weights.npy")
    np.save(folder / "weights.npy", weights)
    os.utime(folder / "weights.npy", ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(folder / "weights.npy")
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    with pytest.raises(MqacheckInputError, match="weights.npy"):
        check(folder, logits, in_process=True)
    with pytest.raises(MqacheckInputError, match="weights.npy"):
        check(folder, logits, in_process=False)


def test_open_bundles_are_bounded_least_recently_used_first_out(bundles, core):
    core_module._open.clear()
    first = core_module.opened_bundle(core, str(bundles("causal")), [], "verify")
    for case in ("random", "dont-care", "packed"):
        core_module.opened_bundle(core, str(bundles(case)), [], "verify")
    assert core_module.opened_bundle(core, str(bundles("causal")), [], "verify") is first  # used again: kept
    core_module.opened_bundle(core, str(bundles("sliding")), [], "verify")  # one past the bound
    assert len(core_module._open) == core_module.OPEN_BUNDLES
    kept = {key[0] for key in core_module._open}
    assert str(bundles("causal").resolve()) in kept and str(bundles("random").resolve()) not in kept


@pytest.mark.torch
def test_torch_tensors_as_numpy_arrays(bundles, core):
    """A torch tensor is taken by DLPack (a view with padded rows included) and judged as the same
    values in a NumPy array, on the host or (a build with the GPU path) on its GPU."""
    import torch
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.inclusive_end_kernel(b)
    expected = check(b, logits, in_process=True).raw
    wide = torch.zeros((b.m, b.n + 3), dtype=torch.float32)
    wide[:, :b.n] = torch.from_numpy(logits)
    same_judgement(check(b, wide[:, :b.n], in_process=True).raw, expected)
    if torch.cuda.is_available():
        same_judgement(check(b, wide[:, :b.n].cuda(), in_process=True).raw, expected)


def bfloat16(logits):
    """float32 -> bfloat16 bits (uint16), nearest with ties to even; NaN the quiet NaN."""
    bits = logits.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(logits), np.uint16(0x7FC0), rounded)


def test_bfloat16_logits_as_the_binary_judges_them(bundles, core, tmp_path, binary):
    """Under logits_dtype="bf16" the bits are judged as bfloat16, as `check --logits-dtype bf16`
    judges a uint16 file of them."""
    b = load_bundle(bundles("causal"))
    rounded = bfloat16(numpy_kernels.fp32_kernel(b))
    np.save(tmp_path / "bf16.npy", rounded)
    subprocess.run([binary, "check", str(b.path), "--logits", str(tmp_path / "bf16.npy"), "--logits-dtype", "bf16",
                    "--json", str(tmp_path / "j.json")], check=False, capture_output=True)
    there = json.loads((tmp_path / "j.json").read_text())
    here = check(b, rounded, in_process=True, logits_dtype="bf16").raw
    same_judgement(here, there)
    assert here["verdict"] == "pass"


@pytest.fixture()
def kept_references(core):
    """The extension's reference store emptied before and after a test, its capacity restored."""
    capacity = core.reference_cache_bytes()
    core_module._open.clear()
    yield core
    core_module._open.clear()
    core.set_reference_cache_bytes(capacity)


@pytest.mark.parametrize("case, contract", [
    ("causal", {"accumulate": "fp32"}),
    ("causal", {"accumulate": "sm90-wgmma", "relu": "fmax"}),  # a modelled centre kept too
    ("random", {"accumulate": "bf16", "logits_dtype": "bf16"}),
    ("nan-codes", {"accumulate": "fp32", "relu": "fmax"}),
    ("paged", {"accumulate": "fp32"}),
])
def test_a_bundle_judged_again_is_judged_against_its_kept_references(bundles, kept_references, case, contract):
    """The second and later judgements of an opened bundle read nothing and compute no reference:
    they are judged against the references the first one gathered, and each judgement, passing or
    failing (diagnosed), is the binary's."""
    core = kept_references
    b = load_bundle(bundles(case))
    good = numpy_kernels.paged_fp32_kernel(b) if case == "paged" else numpy_kernels.fp32_kernel(b)
    bad = good.copy()
    finite = np.argwhere(np.isfinite(bad) & (bad != 0))
    i, j = finite[len(finite) // 2]
    bad[i, j] = bad[i, j] * 3 + 1  # one element far off: error-bound
    if contract.get("logits_dtype") == "bf16":
        good, bad = numpy_kernels._bfloat16_bits(good), numpy_kernels._bfloat16_bits(bad)
    assert core.reference_cache_held() == (0, 0)
    verdicts = []
    for logits in (good, bad, good):
        here, there = both(b, logits, **contract)
        same_judgement(here, there)
        verdicts.append(here["verdict"] == "pass")
        held, bundles_held = core.reference_cache_held()
        assert bundles_held == 1 and held > 0
    # The same output judged before and after a failing one gets the same verdict; the damaged one fails.
    assert verdicts[0] == verdicts[2] and not verdicts[1]


def test_the_reference_store_is_bounded_and_forgets_closed_bundles(bundles, kept_references):
    core = kept_references
    causal, random_case = load_bundle(bundles("causal")), load_bundle(bundles("random"))
    check(causal, numpy_kernels.fp32_kernel(causal), in_process=True, accumulate="fp32")
    one, _ = core.reference_cache_held()
    assert one >= causal.m * causal.n * 12  # a logit and a magnitude per element
    core.set_reference_cache_bytes(one)  # room for one bundle's references
    check(random_case, numpy_kernels.fp32_kernel(random_case), in_process=True, accumulate="fp32")
    assert core.reference_cache_held()[1] == 1  # the least recently used left
    core.set_reference_cache_bytes(0)
    assert core.reference_cache_held() == (0, 0)
    judgement = check(causal, numpy_kernels.fp32_kernel(causal), in_process=True, accumulate="fp32")
    assert judgement.passed and core.reference_cache_held() == (0, 0)  # judged block by block, nothing kept
    core.set_reference_cache_bytes(1 << 30)
    check(causal, numpy_kernels.fp32_kernel(causal), in_process=True, accumulate="fp32")
    assert core.reference_cache_held()[1] == 1
    core_module._open.clear()  # the bundle closed: its references go with it
    import gc
    gc.collect()
    assert core.reference_cache_held() == (0, 0)


def test_a_bundle_named_by_a_relative_path_stays_that_folder(bundles, kept_references, tmp_path, monkeypatch):
    """A bundle opened through a path relative to the working directory is read from the folder it
    named then: its later judgements, which read reference.npy again where no references are kept,
    do not follow the working directory to another folder of the same name."""
    core = kept_references
    core.set_reference_cache_bytes(0)  # every judgement reads reference.npy again
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    (first / "b").symlink_to(bundles("negative-zero"), target_is_directory=True)
    (second / "b").symlink_to(bundles("negative-zero-low-binades"), target_is_directory=True)
    mine, other = load_bundle(first / "b"), load_bundle(second / "b")
    assert (mine.m, mine.n) == (other.m, other.n) and not np.array_equal(mine.reference, other.reference)
    monkeypatch.chdir(first)
    assert check("b", mine.reference, in_process=True, accumulate="exact").passed
    monkeypatch.chdir(second)
    assert check(first / "b", mine.reference, in_process=True, accumulate="exact").passed
    assert not check(first / "b", other.reference, in_process=True, accumulate="exact").passed


def test_a_bundle_in_a_folder_whose_name_is_not_utf8_is_judged(bundles, core, tmp_path):
    """A folder name of bytes that are not UTF-8 (Python's surrogate escapes) reaches the extension
    as the bytes it is, as the binary's argument would."""
    folder = tmp_path / os.fsdecode(b"bundle-\xff")
    folder.symlink_to(bundles("causal"), target_is_directory=True)
    b = load_bundle(folder)
    assert check(folder, b.reference, in_process=True, accumulate="exact").passed
    assert not check(folder, np.zeros_like(b.reference), in_process=True, accumulate="exact").passed


def test_reference_cache_bytes_from_the_environment(monkeypatch, core):
    capacity = core.reference_cache_bytes()
    try:
        monkeypatch.setenv("MQACHECK_REFERENCE_CACHE_BYTES", "12345")
        core_module._loaded.clear()
        assert load_core().reference_cache_bytes() == 12345
        monkeypatch.setenv("MQACHECK_REFERENCE_CACHE_BYTES", "lots")
        core_module._loaded.clear()
        with pytest.raises(ValueError, match="MQACHECK_REFERENCE_CACHE_BYTES='lots': expected a number of bytes"):
            load_core()
    finally:
        core_module._loaded.clear()
        core.set_reference_cache_bytes(capacity)


@pytest.mark.parametrize("case", ["random", "tall"])  # tall: more rows than a modelled centre samples
@pytest.mark.parametrize("contract", [{"accumulate": "fp32"}, {"accumulate": "sm90-wgmma", "relu": "fmax"}])
def test_the_answer_handed_back_is_suspected_by_check_as_by_run(bundles, kept_references, case, contract):
    """check's suspicion note (kept references in process; block by block through the binary, which
    proves reference.npy row by row) counts the elements the run's judge counts, which holds the
    whole reference (judge::finish)."""
    from conftest import QUICK
    from mqacheck import run_suite
    b = load_bundle(bundles(case))
    answer = np.array(b.reference)
    here, there = both(b, answer, **contract)
    same_judgement(here, there)
    assert here["suspicion"]["matched"] == here["suspicion"]["differing"] >= 32, here.get("suspicion")
    assert "suspicious: the output has the exact reference's bits" in check(b, answer, **contract).message()
    result = run_suite(lambda bundle: answer, QUICK, case_names=[case], timing_launches=0, **contract)
    assert result.report["results"][0]["suspicion"] == here["suspicion"]
    # An honest kernel of the declared arithmetic is not suspected.
    if contract["accumulate"] == "fp32":
        assert "suspicion" not in check(b, numpy_kernels.fp32_kernel(b), **contract).raw


def cuda_or_skip(core):
    """torch with a CUDA device, and an extension built with the GPU path; else the test is skipped."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not getattr(core, "gpu", False):
        pytest.skip("no CUDA device, or an extension built without the GPU path")
    return torch


@pytest.mark.parametrize("case, contract", [
    ("causal", {"accumulate": "fp32"}),
    ("random", {"accumulate": "fp32", "answer": True}),  # the reference itself: passes, suspected
    ("causal", {"accumulate": "sm90-wgmma", "relu": "fmax"}),
    ("tall", {"accumulate": "fp22-truncated"}),
    ("dont-care", {}),
    ("nan-codes", {"accumulate": "fp32", "relu": "fmax"}),
])
def test_a_gpu_tensor_is_judged_on_its_device(bundles, kept_references, case, contract):
    """A float32 tensor on the GPU is judged there (the device comparator) when it shows nothing a
    finding is made of, else on the host; either way the judgement is the host array's."""
    core = kept_references
    torch = cuda_or_skip(core)
    b = load_bundle(bundles(case))
    contract = dict(contract)
    answer = contract.pop("answer", False)
    good = np.array(b.reference) if answer else numpy_kernels.fp32_kernel(b)
    bad = good.copy()
    finite = np.argwhere(np.isfinite(bad) & (bad != 0))
    i, j = finite[len(finite) // 2]
    bad[i, j] = bad[i, j] * 3 + 1
    places, verdicts = [], []
    for logits in (good, bad, good):
        on_host = check(b, logits, in_process=True, **contract).raw
        on_device = check(b, torch.from_numpy(logits).cuda(), in_process=True, **contract).raw
        same_judgement(on_device, on_host)
        if case == "random" and logits is good and contract.get("accumulate") == "fp32":
            assert ("suspicion" in on_host) == answer  # the note, where it belongs, on both paths
        places.append(next(reversed(core_module._open.values())).judged_on)
        verdicts.append(on_host["verdict"])
    assert places[1].startswith("host: ") and verdicts[1] == "fail"
    assert places[0] == places[2]
    # A passing output is the device's to judge (the float32 kernel fails sm90-wgmma's tight bound,
    # and nan-codes' NaN weights leave NaN allowances, whose top-k is ranked on the host).
    if verdicts[0] == "pass" and case != "nan-codes":
        assert places[0] == "device"


def test_a_failed_gpu_judgement_reports_no_steps(bundles, kept_references):
    """A GPU tensor refused (too narrow: handed to the host, whose check names it) leaves the
    Bundle saying nothing of where or how long, not the last judgement's steps nor its own."""
    core = kept_references
    torch = cuda_or_skip(core)
    b = load_bundle(bundles("causal"))
    opened = core.Bundle(str(b.path), ["--accumulate", "fp32"], "verify")
    on_gpu = torch.from_numpy(numpy_kernels.fp32_kernel(b)).cuda()
    opened.judge(on_gpu)
    assert opened.judged_on == "device" and opened.seconds["call"] > 0
    with pytest.raises(core.InputError, match=r"logits: expected float32"):
        opened.judge(on_gpu[:, :-1])
    assert opened.judged_on == "" and opened.seconds == {}


def test_a_gpu_pair_is_compared_on_its_device(bundles, kept_references):
    """Two launches on the GPU: identical, judged there; one element apart, judged on the host with
    the host's nondeterministic finding; a padded row stride judged on the device as its copy."""
    core = kept_references
    torch = cuda_or_skip(core)
    b = load_bundle(bundles("causal"))
    logits = numpy_kernels.fp32_kernel(b)
    other = logits.copy()
    i, j = np.argwhere(b.window_mask())[3]
    other[i, j] = np.nextafter(other[i, j], np.float32(np.inf))
    where = lambda: next(reversed(core_module._open.values())).judged_on  # noqa: E731
    on_gpu = torch.from_numpy(logits).cuda()
    identical = check(b, on_gpu, repeat=on_gpu.clone(), in_process=True)
    assert where() == "device"
    same_judgement(identical.raw, check(b, logits, repeat=logits, in_process=True).raw)
    differing = check(b, on_gpu, repeat=torch.from_numpy(other).cuda(), in_process=True)
    assert where() == "host: the two launches differ"
    same_judgement(differing.raw, check(b, logits, repeat=other, in_process=True).raw)
    assert differing.classes() == {"nondeterministic"}
    wide = torch.full((b.m, b.n + 7), float("-inf"), device="cuda")
    wide[:, :b.n] = on_gpu
    padded = check(b, wide, in_process=True)
    assert where() == "device"
    same_judgement(padded.raw, check(b, logits, in_process=True).raw)
