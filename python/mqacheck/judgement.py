"""mqacheck's judgement of one output, as objects (the JSON of `check --json`, reports/README.md),
and the failure message a test prints, in the manner of numpy.testing: what kind of mismatch, how
many elements, where the first one is, expected and actual values, and the bound."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    """One class of disagreement with the exact reference (README.md's table of findings)."""

    class_: str  # stable name: mask-leak, mask-hole, mask-shift, nan, inf, error-bound, ...
    count: int  # elements (rows for topk-mismatch and the top-k index classes: topk-duplicate, ...)
    first: tuple[int, int] | None  # lexicographically first (i, j)
    expected: str
    actual: str
    expected_bits: str
    actual_bits: str
    bound: float  # allowed |error| at first (0 where no bound applies)
    detail: str
    # The planted bug mqacheck's model reproduces the finding with (reports/README.md), or None.
    cause: str | None = None
    diagnosis: str | None = None  # its sentence: "matches a window end read as inclusive ..."

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Finding":
        first = doc.get("first")
        return cls(
            class_=doc["class"], count=int(doc["count"]), first=tuple(first) if first else None,  # type: ignore[arg-type]
            expected=str(doc.get("expected", "")), actual=str(doc.get("actual", "")),
            expected_bits=str(doc.get("expected_bits", "")), actual_bits=str(doc.get("actual_bits", "")),
            bound=float(doc.get("bound", 0.0)), detail=str(doc.get("detail", "")),
            cause=(doc.get("diagnosis") or {}).get("cause"), diagnosis=(doc.get("diagnosis") or {}).get("sentence"))

    def describe(self) -> str:
        where = f" first at {self.first}" if self.first is not None else ""
        values = ""
        if self.expected or self.actual:
            values = (f": expected {self.expected} ({self.expected_bits}), actual {self.actual} ({self.actual_bits})"
                      + (f", bound {self.bound:.6g}" if self.bound else ""))
        diagnosis = f"\n      diagnosis: {self.diagnosis}" if self.diagnosis else ""
        return f"{self.class_} x{self.count}{where}{values}\n      {self.detail}{diagnosis}"


@dataclass(frozen=True)
class Decidedness:
    """Per-row decidedness of the top-k under the declared contract: in each row, the keys every
    admissible top-k keeps (``must_keep``), the keys none keeps (``must_drop``) and the rest
    (``ambiguous``: at the mercy of rounding the contract allows), summed over ``rows``."""

    rows: int
    rows_fully_decided: int
    must_keep: int
    must_drop: int
    ambiguous: int
    median_ambiguous: float  # ambiguous keys per row
    rows_ranked: int  # rows whose window holds more than k keys: a selection
    rows_ranked_fully_decided: int
    median_ambiguous_ranked: float  # ambiguous keys per row, over those
    worst_row: int
    worst_ambiguous: int
    worst_k: int

    @classmethod
    def from_json(cls, doc: dict[str, Any] | None) -> "Decidedness | None":
        if not doc:
            return None
        worst = doc["worst"]
        return cls(rows=int(doc["rows"]), rows_fully_decided=int(doc["rows_fully_decided"]),
                   must_keep=int(doc["must_keep"]), must_drop=int(doc["must_drop"]), ambiguous=int(doc["ambiguous"]),
                   median_ambiguous=float(doc["median_ambiguous"]), rows_ranked=int(doc["rows_ranked"]),
                   rows_ranked_fully_decided=int(doc["rows_ranked_fully_decided"]),
                   median_ambiguous_ranked=float(doc["median_ambiguous_ranked"]), worst_row=int(worst["row"]),
                   worst_ambiguous=int(worst["ambiguous"]), worst_k=int(worst["k"]))

    @property
    def share_fully_decided(self) -> float:
        return self.rows_fully_decided / self.rows

    def __str__(self) -> str:
        return (f"{self.rows_fully_decided}/{self.rows} rows fully decided, median {self.median_ambiguous:g} ambiguous "
                f"keys per row; of the {self.rows_ranked} rows longer than k, {self.rows_ranked_fully_decided} fully "
                f"decided, median {self.median_ambiguous_ranked:g} ambiguous; worst row {self.worst_row}: "
                f"{self.worst_ambiguous} ambiguous of k = {self.worst_k}")


@dataclass(frozen=True)
class Judgement:
    """The verdict on one output: ``passed``, the ``findings`` and the ``metrics``."""

    verdict: str  # "pass" or "fail"
    findings: list[Finding]
    metrics: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    case: str = ""
    contract: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Judgement":
        return cls(verdict=doc["verdict"], findings=[Finding.from_json(f) for f in doc.get("findings", [])],
                   metrics=doc.get("metrics", {}), notes=list(doc.get("notes", [])), case=str(doc.get("case", "")),
                   contract=str(doc.get("contract", "")), raw=doc)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def decidedness(self) -> Decidedness | None:
        """How decided each row's top-k is under the contract (reference/topk/decidedness.hpp), or None
        where no judged row had a window (or the mqacheck that judged predates the figure)."""
        return Decidedness.from_json(self.metrics.get("topk_decidedness"))

    @property
    def suspicion(self) -> str | None:
        """The suspicion note (validator/judge/suspicion.hpp), or None: the output has the exact
        reference's bits where the declared arithmetic rounds away from them, as a kernel that hands
        back an answer it did not compute does. It does not fail the verdict; `mqacheck certify`
        refuses it."""
        s = self.raw.get("suspicion")
        return s.get("note") if isinstance(s, dict) else None

    def classes(self) -> set[str]:
        return {f.class_ for f in self.findings}

    def message(self) -> str:
        """Readable in a test log: the verdict, each finding with its first coordinates, the metrics:
        the error in ULPs of the magnitude A and raw ULPs over well-conditioned elements first, the raw
        ULPs over all elements after them."""
        m = self.metrics
        head = (f"mqacheck: {'pass' if self.passed else 'FAIL'} on case {self.case!r} under {self.contract}"
                if self.case else f"mqacheck: {'pass' if self.passed else 'FAIL'}")
        lines = [head]
        if self.findings:
            summary = ", ".join(f"{f.class_} x{f.count}" for f in self.findings)
            lines.append(f"Mismatched: {summary} ({m.get('compared', '?')} in-window elements compared, "
                         f"{m.get('rows_judged', '?')} rows)")
            lines += [f"  {f.describe()}" for f in self.findings]
        # The condition-free figures first (docs/contracts.md, "Why raw ULPs mislead here"): raw ULPs
        # of an element whose head terms cancel measure the case, not the kernel.
        magnitude, conditioned = m.get("magnitude_ulp") or {}, m.get("conditioned_ulp") or {}
        if magnitude.get("max") is not None:
            lines.append(f"ULPs of A: p50 {_number(magnitude.get('p50'))}, p99 {_number(magnitude.get('p99'))}, "
                         f"p99.9 {_number(magnitude.get('p999'))}, max {_number(magnitude.get('max'))}")
        if conditioned.get("share") is not None:
            lines.append(f"Well conditioned ({_number(conditioned.get('share'))} of compared): p99 "
                         f"{conditioned.get('p99')} ULP, max {conditioned.get('max')} ULP")
        ulp = m.get("ulp", {})
        if ulp:
            worst = m.get("worst")
            lines.append(f"Raw max ULP {ulp.get('max')}, p99 {ulp.get('p99')}; max error/bound "
                         f"{_number(m.get('max_error_over_bound'))}{f' at {tuple(worst)}' if worst else ''}; "
                         f"top-k recall {_number(m.get('topk_recall'))}")
        if self.decidedness is not None:
            lines.append(f"Top-k decidedness: {self.decidedness}")
        lines += [f"note: {n}" for n in self.notes]
        if self.suspicion:
            lines.append(self.suspicion)
        return "\n".join(lines)

    def assert_pass(self) -> "Judgement":
        """Raises AssertionError with :meth:`message` unless the verdict is pass; returns self."""
        if not self.passed:
            raise AssertionError(self.message())
        return self

    def __str__(self) -> str:
        return self.message()


def _number(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)
