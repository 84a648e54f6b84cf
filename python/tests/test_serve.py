"""serve() over pipes, as mqacheck drives it: `python3 -m mqacheck.adapter` in a child process,
requests written to its stdin, one response line read back per request."""
import io
import json
import os
import sys

import numpy as np
import pytest

from conftest import HERE, python_env
from host import POISON_BITS, Adapter
from mqacheck import POISON_BITS as PACKAGE_POISON_BITS
from mqacheck import Unsupported, load_bundle, serve

KERNELS = HERE / "numpy_kernels.py"


def adapter(function, *extra):
    return Adapter([sys.executable, "-m", "mqacheck.adapter", "--function", f"{KERNELS}:{function}", *extra],
                   python_env())


def reference_logits(bundle_path):
    import numpy_kernels
    return numpy_kernels.fp32_kernel(load_bundle(bundle_path))


def test_poison_is_the_protocols():
    assert PACKAGE_POISON_BITS == POISON_BITS == 0x7FC0DEAD


def test_ok_response_and_logits(bundles, tmp_path):
    b = bundles("random")
    out = tmp_path / "out.npy"
    with adapter("fp32_kernel", "--label", "numpy fp32 1.0") as a:
        response = a.request(b, out, shape=(48, 131))
        assert response["ok"] is True and response["label"] == "numpy fp32 1.0"
        assert isinstance(response["seconds"], float) and 0 <= response["seconds"] < 10
        np.testing.assert_array_equal(np.load(out), reference_logits(b))
        assert [p.name for p in tmp_path.iterdir()] == ["out.npy"]  # the temporary was renamed, not left
        status, rest, _ = a.close()
    assert status == 0 and rest == ""


def test_in_place_kernel_fills_the_poisoned_buffer(bundles, tmp_path):
    b = bundles("causal")  # n = 150: the tail tile (128..149) is partial
    with adapter("tiled_in_place") as a, adapter("tail_dropped_in_place") as bug:
        assert a.request(b, tmp_path / "ok.npy", shape=(32, 160))["ok"]
        assert bug.request(b, tmp_path / "bug.npy", shape=(32, 160))["ok"]
    good, bad = np.load(tmp_path / "ok.npy"), np.load(tmp_path / "bug.npy")
    assert good.shape == (32, 160)  # mqacheck's padded stride is kept
    np.testing.assert_array_equal(good[:, :150], reference_logits(b))
    assert (good[:, 150:].view(np.uint32) == POISON_BITS).all()  # the padding is the kernel's to leave alone
    assert (bad[:, 128:].view(np.uint32) == POISON_BITS).all() and (bad[:, :128] == good[:, :128]).all()


def test_in_place_without_a_poisoned_file(bundles, tmp_path):
    with adapter("tail_dropped_in_place") as a:
        assert a.request(bundles("causal"), tmp_path / "out.npy")["ok"]
    out = np.load(tmp_path / "out.npy")
    assert out.shape == (32, 150) and (out[:, 128:].view(np.uint32) == POISON_BITS).all()


def test_kernel_exception_is_an_error_response(bundles, tmp_path):
    with adapter("failing_kernel") as a:
        response = a.request(bundles("causal"), tmp_path / "out.npy", shape=(32, 150))
        assert response == {"id": response["id"], "ok": False,
                            "error": "ValueError: head_dim 64 is not supported by this kernel"}
        again = a.request(bundles("random"), tmp_path / "out.npy", shape=(48, 131))  # still serving
        assert again["ok"] is False
        status, rest, err = a.close()
    assert status == 0 and rest == ""
    assert "Traceback" in err and "failing_kernel" in err  # the traceback goes to stderr only
    assert (np.load(tmp_path / "out.npy").view(np.uint32) == POISON_BITS).all()  # out untouched


@pytest.mark.parametrize("function, message", [
    ("wrong_shape_kernel", r"shape \[32, 149\]; expected \[32, S\] with S >= 150"),
    ("float64_kernel", r"TypeError: .* has dtype float64; float32 logits are expected"),
    ("returns_from_in_place", r"TypeError: .*returned a ndarray: an in-place kernel writes into out"),
])
def test_lying_kernels_are_refused(bundles, tmp_path, function, message):
    import re
    with adapter(function) as a:
        response = a.request(bundles("causal"), tmp_path / "out.npy", shape=(32, 150))
    assert response["ok"] is False and re.search(message, response["error"]), response


def test_kernel_prints_never_reach_the_protocol(bundles, tmp_path):
    with adapter("noisy_kernel") as a:
        for launch in (1, 2):
            assert a.request(bundles("causal"), tmp_path / "out.npy", launch, shape=(32, 150))["ok"]
        status, rest, err = a.close()
    assert status == 0 and rest == ""
    assert err.count("a kernel's chatter on stdout") == 2 and err.count("chatter written straight to fd 1") == 2


def test_bad_requests_are_answered(bundles, tmp_path):
    with adapter("fp32_kernel") as a:
        response = a.send("this is not json")
        assert response["ok"] is False and response["error"].startswith("bad request: request is not JSON")
        assert "bad request: request is not JSON" in a.send("{oops")["error"]
        assert "lacks \"out\"" in a.send(json.dumps({"bundle": str(bundles("causal"))}))["error"]
        assert "\"launch\" is 0" in a.send(json.dumps({"bundle": "b", "out": "o", "launch": 0}))["error"]
        # A refused request is still answered with its id, so mqacheck knows which request failed.
        refused = a.send(json.dumps({"id": "7.2", "bundle": "b", "out": "o", "launch": 0}))
        assert refused["id"] == "7.2" and "\"launch\" is 0" in refused["error"]
        assert "\"id\" is 7" in a.send(json.dumps({"id": 7, "bundle": "b", "out": "o"}))["error"]
        # JSON Python will not read (an integer of 5000 digits, arrays nested past the stack): answered too.
        assert "ValueError" in a.send('{"bundle": "b", "out": "o", "launch": ' + "9" * 5000 + "}")["error"]
        assert "RecursionError" in a.send("[" * 100000 + "]" * 100000)["error"]
        missing = a.request(tmp_path / "no-bundle", tmp_path / "out.npy")
        assert missing["ok"] is False and "no-bundle" in missing["error"]
        assert a.request(bundles("causal"), tmp_path / "out.npy", shape=(32, 150))["ok"]  # and goes on


def test_a_replaced_bundle_is_read_again(bundles, tmp_path):
    """mqacheck may reuse one folder for every case: the cache must notice the new case."""
    import shutil
    folder = tmp_path / "bundle"
    shutil.copytree(bundles("causal"), folder)
    with adapter("fp32_kernel") as a:
        assert a.request(folder, tmp_path / "a.npy", shape=(32, 150))["ok"]
        shutil.rmtree(folder)
        shutil.copytree(bundles("random"), folder)
        assert a.request(folder, tmp_path / "b.npy", shape=(48, 131))["ok"]
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), reference_logits(bundles("random")))


def test_adapter_refuses_a_bad_function(tmp_path):
    for spec, message in ((f"{KERNELS}:no_such_kernel", "has no attribute 'no_such_kernel'"),
                          (f"{tmp_path}/missing.py:f", "no such file"),
                          ("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
                          ("numpy_kernels", "expected MODULE:FUNCTION"),
                          ("numpy_kernels:BLOCK_N", "is a int, not a function")):
        a = Adapter([sys.executable, "-m", "mqacheck.adapter", "--function", spec], python_env())
        status, out, err = a.close()
        assert status == 2 and out == "" and message in err, (spec, err)


def test_labels_are_ones_mqacheck_takes(bundles, tmp_path):
    """A label mqacheck would refuse in every answer (past 200 bytes, a control character) is refused
    when given; the default one, made of a long path, is cut to fit and still names the function."""
    from mqacheck.protocol import MAX_LABEL_BYTES, fitted_label, label_problem
    for bad in ("x" * 201, "my\nkernel", "tab\there", ""):
        assert label_problem(bad), bad
        a = Adapter([sys.executable, "-m", "mqacheck.adapter", "--function", f"{KERNELS}:fp32_kernel", "--label", bad],
                    python_env())
        status, out, err = a.close()
        assert status == 2 and out == "" and "--label" in err, (bad, err)
        with pytest.raises(ValueError, match="label"):
            serve(lambda b: None, label=bad, stdin=io.StringIO(""), stdout=io.StringIO())
    assert label_problem("é" * 100) == "" and label_problem("é" * 101)  # bytes of UTF-8, not characters
    long_path = "bundle:/" + "a-long-folder/" * 20 + "kernels.py:fp32_kernel\x07"
    fitted = fitted_label(long_path)
    assert label_problem(fitted) == "" and len(fitted.encode()) <= MAX_LABEL_BYTES
    assert fitted.startswith("...") and fitted.endswith("kernels.py:fp32_kernel")
    assert len(fitted_label("é" * 150).encode()) <= MAX_LABEL_BYTES
    deep = tmp_path / ("a-long-folder-name-" * 6) / ("and-another-one-" * 6)
    deep.mkdir(parents=True)
    (deep / "kernels.py").write_text(KERNELS.read_text())
    with Adapter([sys.executable, "-m", "mqacheck.adapter", "--function", f"{deep}/kernels.py:fp32_kernel"],
                 python_env()) as a:
        answer = a.request(bundles("causal"), tmp_path / "out.npy", shape=(32, 150))
    assert answer["ok"] and label_problem(answer["label"]) == "" and answer["label"].endswith("kernels.py:fp32_kernel")


def test_serve_in_process_with_streams(bundles, tmp_path):
    """serve() with explicit streams: the same protocol, without a child process."""
    import numpy_kernels
    request = {"bundle": str(bundles("sliding")), "out": str(tmp_path / "out.npy"), "launch": 1}
    lines = [json.dumps({"id": "1.1", **request}), "", json.dumps({"id": "1.2", **request, "launch": 2})]
    stdin, stdout = io.StringIO("\n".join(lines) + "\n"), io.StringIO()
    assert serve(numpy_kernels.fp32_kernel, label="x", stdin=stdin, stdout=stdout) == 0
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert [a["id"] for a in answers] == ["1.1", "1.2"]  # each echoes its request's; the blank line is no request
    assert all(a["ok"] for a in answers)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), reference_logits(bundles("sliding")))


def test_unsupported_becomes_the_unsupported_answer(bundles, tmp_path):
    """A kernel raising Unsupported("why") answers {"ok": false, "unsupported": "why"}: no error, no
    output written; the next request is served as usual."""
    import numpy_kernels

    def eight_heads_only(bundle):
        if bundle.heads != 8:
            raise Unsupported(f"{bundle.heads} heads: built for 8")
        return numpy_kernels.fp32_kernel(bundle)

    lines = [json.dumps({"id": "1.1", "bundle": str(bundles("tall")), "out": str(tmp_path / "tall.npy"), "launch": 1}),
             json.dumps({"id": "2.1", "bundle": str(bundles("causal")), "out": str(tmp_path / "causal.npy"), "launch": 1})]
    stdout = io.StringIO()
    assert serve(eight_heads_only, stdin=io.StringIO("\n".join(lines) + "\n"), stdout=stdout) == 0
    refused, served = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert refused == {"id": "1.1", "ok": False, "unsupported": "4 heads: built for 8"}
    assert not (tmp_path / "tall.npy").exists()
    assert served["id"] == "2.1" and served["ok"] is True


def test_readme_adapter_example(bundles, tmp_path):
    """python/README.md's complete adapter, run as written."""
    from conftest import PACKAGE
    text = (PACKAGE / "README.md").read_text()
    block = text.split("A complete adapter, `my_adapter.py`:\n\n", 1)[1].split("\n\n    mqacheck run", 1)[0]
    (tmp_path / "my_adapter.py").write_text("\n".join(line[4:] for line in block.splitlines()) + "\n")
    with Adapter([sys.executable, str(tmp_path / "my_adapter.py")], python_env()) as a:
        response = a.request(bundles("random"), tmp_path / "out.npy", shape=(48, 131))
    assert response == {"id": response["id"], "ok": True, "seconds": response["seconds"], "label": "numpy fp32 1.0"}
    from mqacheck import check
    assert check(bundles("random"), np.load(tmp_path / "out.npy"), accumulate="fp32").passed


def test_the_kernel_is_given_no_reference(bundles, tmp_path):
    """A kernel (or a wrapper returning the wrong tensor of its bundle) cannot return the answer:
    the bundle serve hands it has no reference attribute, even where the folder holds reference.npy."""
    assert (bundles("causal") / "reference.npy").exists()
    with adapter("reference_copier") as a:
        response = a.request(bundles("causal"), tmp_path / "out.npy", shape=(32, 150))
    assert response["ok"] is False and "AttributeError" in response["error"] and "reference" in response["error"]
    assert (np.load(tmp_path / "out.npy").view(np.uint32) == POISON_BITS).all()


def test_inputs_only_folder_is_served(bundles, tmp_path):
    """`mqacheck run --kernel` gives the adapter a folder without reference.npy."""
    import shutil
    folder = tmp_path / "inputs"
    shutil.copytree(bundles("causal"), folder)
    (folder / "reference.npy").unlink()
    (folder / "digest.json").unlink()
    with adapter("fp32_kernel") as a:
        assert a.request(folder, tmp_path / "out.npy", shape=(32, 150))["ok"]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy")[:, :150], reference_logits(bundles("causal")))
