"""The pytest plugin, run as a user runs it: pytest in a child process on a small test file."""
import re
import shlex
import subprocess
import sys
import textwrap

from conftest import QUICK, ROOT, python_env

USER_TESTS = textwrap.dedent('''
    import numpy_kernels
    import pytest

    def test_fp32(mqa_case):
        mqa_case.judge(numpy_kernels.fp32_kernel, accumulate="fp32")

    def test_tiled_in_place(mqa_case):
        j = mqa_case.judge(numpy_kernels.tiled_in_place, accumulate="fp32")
        assert j.passed and mqa_case.bundle().name == mqa_case.name

    def test_reference_copier(mqa_case):
        mqa_case.judge(numpy_kernels.reference_copier, accumulate="fp32")

    def test_inclusive_end(mqa_case):
        mqa_case.judge(numpy_kernels.inclusive_end_kernel, accumulate="fp32")

    def test_aiter_convention(mqa_case):
        mqa_case.judge(numpy_kernels.aiter_fp8_mqa_logits, convention="aiter", accumulate="fp32", launches=1)

    @pytest.mark.mqa_suite("cases/bugs/16-unwritten-tail.toml")
    def test_tail_dropped(mqa_case):
        mqa_case.judge(numpy_kernels.tail_dropped_in_place, accumulate="fp32")
''')


def pytest_child(tmp_path, *args, tests=USER_TESTS):
    (tmp_path / "test_user_kernel.py").write_text(tests)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "mqacheck.pytest_plugin", "-p", "no:cacheprovider",
                           "-q", "-rf", "--rootdir", str(ROOT), str(tmp_path / "test_user_kernel.py"), *args],
                          capture_output=True, text=True, env=python_env(), cwd=tmp_path, timeout=600)
    return done, done.stdout + done.stderr


def outcomes(output):
    return {o: int(n) for n, o in re.findall(r"(\d+) (passed|failed|error|skipped)", output.splitlines()[-1])}


def test_parametrized_over_the_suite(tmp_path):
    done, out = pytest_child(tmp_path, "--mqa-suite", str(QUICK), "--mqa-case", "causal", "--mqa-case", "random")
    # causal and random for each quick test, and the bug suite's own cases for test_tail_dropped
    # causal and random for each quick test; test_tail_dropped's own suite has neither: skipped
    # test_reference_copier fails on each: the bundle a kernel gets has no reference
    assert outcomes(out) == {"passed": 6, "failed": 4, "skipped": 1}, out
    assert "FAILED" in out and "test_inclusive_end[causal]" in out and "mask-shift x" in out
    assert "test_reference_copier[causal]" in out and "no attribute 'reference'" in out
    assert done.returncode == 1


def test_a_test_with_its_own_suite(tmp_path):
    done, out = pytest_child(tmp_path, "-k", "test_tail_dropped")
    assert outcomes(out) == {"failed": 1}, out
    assert "test_tail_dropped[ragged-n]" in out and "unwritten x" in out, out


def test_default_suite_is_the_checkouts_quick_toml(tmp_path):
    done, out = pytest_child(tmp_path, "-k", "test_fp32", "--collect-only")
    ids = re.findall(r"test_fp32\[([^\]]+)\]", out)
    from conftest import quick_cases
    assert ids == quick_cases(), out


def one_error_line(out):
    """The usage error's lines: exactly one, and no traceback of pytest's or the plugin's."""
    assert "Traceback" not in out and "_pytest" not in out and "pytest_plugin.py" not in out, out
    return [line for line in out.splitlines() if line.startswith("ERROR")]


def test_unknown_case_is_a_usage_error(tmp_path):
    done, out = pytest_child(tmp_path, "--mqa-case", "no-such-case")
    errors = one_error_line(out)
    assert done.returncode == 4 and len(errors) == 1, out
    assert "--mqa-case no-such-case: not in" in errors[0] and "causal" in errors[0], out


MARKED_ONLY = textwrap.dedent('''
    import numpy_kernels
    import pytest

    @pytest.mark.mqa_suite("cases/bugs/16-unwritten-tail.toml")
    def test_tail_dropped(mqa_case):
        mqa_case.judge(numpy_kernels.tail_dropped_in_place, accumulate="fp32")
''')


def test_a_case_is_looked_for_in_every_suite_the_tests_use(tmp_path):
    """--mqa-case names a case of any collected test's suite: one only a marker's suite has is run
    there (the unmarked tests have no such case, and skip); a name no suite has, even where every
    test has a suite of its own, is a usage error, never an empty run that passes."""
    done, out = pytest_child(tmp_path, "--mqa-case", "ragged-n")
    assert done.returncode == 1 and "test_tail_dropped[ragged-n]" in out and "unwritten x" in out, out
    done, out = pytest_child(tmp_path, "--mqa-case", "ragged-nn", tests=MARKED_ONLY)
    errors = one_error_line(out)
    assert done.returncode == 4 and len(errors) == 1 and "--mqa-case ragged-nn: not in" in errors[0], out


def test_a_suite_that_is_no_file_and_a_bare_marker_are_one_line(tmp_path):
    for args, tests, words in ((["--mqa-suite", str(tmp_path)], USER_TESTS, "a folder, not a suite file"),
                               ([], "import pytest\n\n@pytest.mark.mqa_suite\ndef test_x(mqa_case):\n    pass\n",
                                "takes one suite file's path")):
        done, out = pytest_child(tmp_path, *args, tests=tests)
        errors = one_error_line(out)
        assert done.returncode == 4 and len(errors) == 1 and words in errors[0], out


def test_fewer_than_one_launch_is_refused(tmp_path):
    tests = ("import numpy_kernels\n\ndef test_no_launch(mqa_case):\n"
             "    mqa_case.judge(numpy_kernels.fp32_kernel, accumulate='fp32', launches=0)\n")
    done, out = pytest_child(tmp_path, "--mqa-case", "causal", tests=tests)
    assert outcomes(out) == {"failed": 1} and "launches=0: expected 1 (no determinism check) or more" in out, out


def test_no_suite_outside_a_checkout_is_one_line(tmp_path):
    """Outside a checkout (no cases/quick.toml above the root directory) and without --mqa-suite."""
    (tmp_path / "test_user_kernel.py").write_text("def test_fp32(mqa_case):\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "mqacheck.pytest_plugin", "-p", "no:cacheprovider",
                           "-q", "--rootdir", str(tmp_path), str(tmp_path / "test_user_kernel.py")],
                          capture_output=True, text=True, env=python_env(), cwd=tmp_path, timeout=600)
    out = done.stdout + done.stderr
    errors = one_error_line(out)
    assert done.returncode == 4 and errors == ["ERROR: mqacheck: no suite for mqa_case: give --mqa-suite FILE (or the "
                                               "mqa_suite ini setting)"], out


def test_missing_suite_file_is_one_line(tmp_path):
    done, out = pytest_child(tmp_path, "--mqa-suite", str(tmp_path / "no-such.toml"))
    errors = one_error_line(out)
    assert done.returncode == 4 and len(errors) == 1 and "no-such.toml" in errors[0], out


def test_a_failure_prints_the_command_that_reproduces_it(tmp_path):
    """The failing test's output saved, and `mqacheck check` on it gives the same findings."""
    done, out = pytest_child(tmp_path, "--mqa-case", "causal", "-k", "test_inclusive_end")
    assert outcomes(out) == {"failed": 1}, out
    argv = reproduced(out, "mask-shift")
    assert argv[1] == "check" and "--logits" in argv and "--repeat" in argv and argv[-2:] == ["--accumulate", "fp32"], argv


def reproduced(out, finding):
    """The one command a failing test printed, run: it must fail again with ``finding``. Its argv."""
    commands = [line.split("reproduce: ", 1)[1] for line in out.splitlines() if "reproduce: " in line]
    assert len(commands) == 1, out
    argv = shlex.split(commands[0])
    again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert again.returncode == 1 and finding in again.stdout, again.stdout + again.stderr
    return argv


BF16_TESTS = textwrap.dedent('''
    import numpy_kernels

    def test_bf16(mqa_case):
        mqa_case.judge(numpy_kernels.bfloat16_kernel, accumulate="fp32", logits_dtype="bf16")

    def test_bf16_truncated(mqa_case):
        mqa_case.judge(numpy_kernels.bfloat16_truncating_kernel, accumulate="fp32", logits_dtype="bf16")

    def test_bf16_in_place(mqa_case):
        mqa_case.judge(numpy_kernels.tiled_in_place, accumulate="fp32", logits_dtype="bf16")
''')


def test_bfloat16_logits_are_judged_as_the_kernels_bits(tmp_path):
    """Under logits_dtype="bf16" the kernel's bfloat16 bits are judged (not their float32
    widening); a truncating kernel fails, with a command that reproduces it; an in-place kernel,
    whose buffer is float32, is told why it cannot be judged so."""
    done, out = pytest_child(tmp_path, "--mqa-case", "causal", tests=BF16_TESTS)
    assert outcomes(out) == {"passed": 1, "failed": 2}, out
    assert "test_bf16_in_place" in out and "returns its bfloat16 logits" in out, out
    assert reproduced(out, "error-bound")[-4:] == ["--accumulate", "fp32", "--logits-dtype", "bf16"]


def test_missing_binary_fails_the_test_not_the_run(tmp_path):
    done, out = pytest_child(tmp_path, "--mqa-case", "causal", "-k", "test_fp32", "--mqa-binary", "/nonexistent/mqacheck")
    assert done.returncode == 1 and "/nonexistent/mqacheck" in out and "not an executable" in out, out


PAGED_TESTS = textwrap.dedent('''
    import numpy_kernels

    def test_decode(mqa_case):
        mqa_case.judge(numpy_kernels.paged_fp32_kernel, operation="paged", accumulate="fp32")

    def test_deepgemm_decode(mqa_case):
        mqa_case.judge(numpy_kernels.deepgemm_fp8_paged_mqa_logits, convention="deepgemm-paged", accumulate="fp32")

    def test_prefill(mqa_case):
        mqa_case.judge(numpy_kernels.fp32_kernel, accumulate="fp32")
''')


def test_cases_of_another_operation_are_skipped(tmp_path):
    """Paged decode cases: a prefill kernel skips them, a paged one the prefill cases."""
    done, out = pytest_child(tmp_path, "--mqa-case", "paged", "--mqa-case", "causal", "-rs", tests=PAGED_TESTS)
    assert outcomes(out) == {"passed": 3, "skipped": 3}, out
    assert "case 'causal' is prefill; the kernel computes paged" in out
    assert "case 'paged' is paged; the kernel computes prefill" in out
    assert done.returncode == 0


UNSUPPORTED_TESTS = textwrap.dedent('''
    import numpy_kernels
    from mqacheck import Unsupported

    def test_refuses_first(mqa_case):
        def kernel(bundle):
            raise Unsupported("built for 64 heads")
        mqa_case.judge(kernel, accumulate="fp32")

    def test_refuses_second(mqa_case):
        calls = []
        def kernel(bundle):
            calls.append(1)
            if len(calls) > 1:
                raise Unsupported("changed its mind")
            return numpy_kernels.fp32_kernel(bundle)
        mqa_case.judge(kernel, accumulate="fp32")
''')


def test_unsupported_skips_on_the_first_launch_only(tmp_path):
    """A kernel that does not take a case skips its test with the reason; one that says so after its
    first launch ran fails it (the same rule as `run --kernel`)."""
    done, out = pytest_child(tmp_path, "--mqa-suite", str(QUICK), "--mqa-case", "causal", "-rs", tests=UNSUPPORTED_TESTS)
    assert outcomes(out) == {"failed": 1, "skipped": 1}, out
    assert "the kernel does not take it: built for 64 heads" in out
    assert "test_refuses_second[causal]" in out and "changed its mind" in out
    assert done.returncode == 1
