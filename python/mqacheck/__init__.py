"""mqacheck from Python: judge fp8 MQA-logits kernels against mqacheck's exact oracle.

    load_inputs(path, device=None)   a case's inputs (NumPy, or torch fp8 tensors on a device): what a kernel gets
    load_bundle(path, device=None)   the same with the exact reference, for analysis (never for a kernel)
    serve(fn)                        fn as the adapter of `mqacheck run --kernel 'COMMAND'`
    Unsupported("why")               raised by a kernel for a case it does not take: skipped, not an error
    check(bundle, logits, **contract)  `mqacheck check`'s judgement as objects (in this process where
                                     mqacheck._core is built: load_core)
    run_suite(fn, cases, **contract)   `mqacheck run --kernel` with fn in this process, the same reports
                                     (also python3 -m mqacheck run)
    pytest plugin                    the mqa_case fixture (mqacheck.pytest_plugin)
    conventions                      DeepGEMM, AITER and vLLM call signatures (python3 -m mqacheck.adapter)
    references                       reference styles people use (DeepGEMM's test, vLLM's bf16 fallback)

python/README.md documents each with a complete example, and the protocol.
"""
from .bundle import Bundle, BundleError, Fp8Codes, PagedLayout, ReferencedBundle, load_bundle, load_inputs
from .check import MqacheckError, MqacheckInputError, check
from .core import CoreNotFound, load_core
from .binary import BinaryNotFound, find_binary
from .formats import FORMATS, Format, FormatError, format_named
from .judgement import Decidedness, Finding, Judgement
from .launch import Launch, launch
from .protocol import POISON, POISON_BITS, Unsupported
from .serve import serve
from .suite_run import SuiteResult, run_suite

__all__ = [
    "BinaryNotFound", "Bundle", "BundleError", "CoreNotFound", "Decidedness", "FORMATS", "Finding", "Format",
    "FormatError", "Fp8Codes", "Judgement", "Launch", "MqacheckError", "MqacheckInputError", "POISON", "POISON_BITS", "PagedLayout", "ReferencedBundle",
    "Unsupported", "check", "find_binary", "format_named", "launch", "load_bundle", "load_core", "load_inputs",
    "serve", "SuiteResult", "run_suite",
]
__version__ = "0.1.0"
