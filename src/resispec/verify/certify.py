"""``certify(method)``: is a verifier what it claims? Its exact law, its sampler and its acceptance on
seeded random (p, q, k) cases of several vocabularies and shapes.

Per case (``Case``: target p, draft q [V] float64, k candidates):

- the law: ``method.law(p, q, k)`` is exact when KL(p || law) <= ``KL_TOL`` (float64 rounding);
- the sampler: ``SAMPLES`` rows of ``method.verify`` with candidates drawn as the method draws them
  (i.i.d. from q, without replacement, or the top-k of q) emit tokens whose counts are tested against the
  method's own law (chi-square, cells of expected count < 5 pooled) at level ``FAMILY_ALPHA / cases``:
  a correct sampler fails the whole certificate with probability <= ``FAMILY_ALPHA``, and a sampler
  whose token law is at total variation >= 0.05 from its law on a case (V <= 32) is caught with
  probability > 0.999 (noncentrality >= 4 N TV^2 = 200 against a critical value of at most 80);
- the bound: the claimed acceptance is compared with the most any exact verifier can accept with the
  method's candidates (alpha* for i.i.d. candidates, alpha*_wor without replacement, p(top-k of q) for
  fixed ones); above it (beyond ``BOUND_TOL``) the method cannot be exact.

Each case's verdict is "exact", "inexact law" (a law that differs from p) or "sampler disagrees with its
law" (``verify`` samples something other than ``law`` says, whatever ``law`` is).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from .bound import alpha_star
from .checks import as_float64
from .greedy import top_candidates
from .registry import Method, get_method
from .wor_bound import alpha_star_wor

KL_TOL = 1e-12  # KL(p || law) of an exact float64 law is rounding noise, far below this
BOUND_TOL = 1e-9  # alpha* / alpha*_wor are computed to ~1e-12 / 1e-9 (quadrature)
SAMPLES = 20000  # verify rows per case: see the power statement above
CHUNK = 2000  # rows per verify call (batched planners' cost grows faster than linearly in the rows)
FAMILY_ALPHA = 1e-4  # chance that a correct sampler fails the certificate (Bonferroni over the cases)
MIN_EXPECTED = 5.0  # chi-square cells expected below this many counts are pooled into one
VOCABS = (4, 16, 32)
SHAPES = ("peaked", "flat", "disjoint", "q zero on part", "random")
EXACT, INEXACT_LAW, SAMPLER_DISAGREES = "exact", "inexact law", "sampler disagrees with its law"


class Case(NamedTuple):
    """One (p, q, k): target and draft [V] float64, each summing to 1, and the number of candidates."""

    name: str
    target: torch.Tensor
    draft: torch.Tensor
    k: int


@dataclass
class CaseReport:
    """One case's checks: KL(p || law), the claimed acceptance and its bound, the chi-square p-value of
    the sampler against the law, and the verdict."""

    case: str
    vocab: int
    k: int
    kl: float
    acceptance: float
    bound: float
    p_value: float
    verdict: str

    @property
    def above_bound(self) -> bool:
        return self.acceptance > self.bound + BOUND_TOL


@dataclass
class Certificate:
    """``exact``: the law is p on every case; ``sampler_matches_law``: the sampler passed every case's
    chi-square; ``above_alpha_star``: the cases whose claimed acceptance exceeds the bound (no exact
    method can); ``verdict``: "exact", else the first failing case's verdict with the case named."""

    method: str
    claimed_exact: bool
    cases: list[CaseReport] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return all(c.kl <= KL_TOL for c in self.cases)

    @property
    def sampler_matches_law(self) -> bool:
        return all(c.verdict != SAMPLER_DISAGREES for c in self.cases)

    @property
    def above_alpha_star(self) -> list[str]:
        return [c.case for c in self.cases if c.above_bound]

    @property
    def failures(self) -> list[CaseReport]:
        return [c for c in self.cases if c.verdict != EXACT]

    @property
    def verdict(self) -> str:
        failures = self.failures
        return EXACT if not failures else f"{failures[0].verdict} (case {failures[0].case!r})"

    def __str__(self) -> str:
        lines = [f"{self.method}: {self.verdict}; claims exact: {self.claimed_exact}"]
        lines += [
            f"  {c.case:<28} V={c.vocab:<3} k={c.k} KL={c.kl:.2e} acceptance={c.acceptance:.6f} "
            f"bound={c.bound:.6f} chi2 p={c.p_value:.3g}  {c.verdict}"
            for c in self.cases
        ]
        if self.above_alpha_star:
            lines.append(f"  acceptance above the bound on: {', '.join(self.above_alpha_star)}")
        return "\n".join(lines)


def _shape(shape: str, vocab: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    def dirichlet(size: int, scale: float) -> torch.Tensor:
        return torch.softmax(torch.randn(size, generator=generator, dtype=torch.float64) * scale, -1)

    if shape == "peaked":
        return dirichlet(vocab, 4.0), dirichlet(vocab, 4.0)
    if shape == "flat":
        return dirichlet(vocab, 0.1), dirichlet(vocab, 0.1)
    half = vocab // 2
    zeros = torch.zeros(vocab - half, dtype=torch.float64)
    if shape == "disjoint":  # p on the first half, q on the second: alpha* = 0
        return torch.cat([dirichlet(half, 1.0), zeros]), torch.cat([zeros, dirichlet(vocab - half, 1.0)])
    if shape == "q zero on part":  # p everywhere, q on the first half only
        return dirichlet(vocab, 1.0), torch.cat([dirichlet(half, 1.0), zeros])
    return dirichlet(vocab, 1.0), dirichlet(vocab, 1.0)


def default_cases(seed: int = 0) -> list[Case]:
    """Every shape of ``SHAPES`` on every vocabulary of ``VOCABS``, k cycling through 1, 2, 3."""
    generator = torch.Generator().manual_seed(seed)
    cases = []
    for vocab in VOCABS:
        for shape in SHAPES:
            k = 1 + len(cases) % 3
            target, draft = _shape(shape, vocab, generator)
            cases.append(Case(f"{shape}, V={vocab}, k={k}", target, draft, k))
    return cases


def bound_for(draws: str, target: torch.Tensor, draft: torch.Tensor, k: int) -> float:
    """The most an exact verifier accepts with candidates drawn as ``draws`` says (float64 [V] inputs)."""
    if draws == "with_replacement":
        return alpha_star(target, draft, k)
    if draws == "without_replacement":  # no more than the tokens with q > 0 can be drawn
        return alpha_star_wor(target, draft, min(k, int((draft > 0).sum())))
    target, draft = as_float64(target, draft)
    return float(target[top_candidates(draft, k)].sum())


def draw_candidates(draws: str, draft: torch.Tensor, k: int, rows: int, generator: torch.Generator):
    """Candidates long [rows, k] and valid bool [rows, k] for one draft [V], drawn as ``draws`` says."""
    vocab = draft.shape[-1]
    if draws == "with_replacement":
        tokens = torch.multinomial(draft.expand(rows, -1), k, replacement=True, generator=generator)
        return tokens, torch.ones_like(tokens, dtype=torch.bool)
    if draws == "without_replacement":  # Gumbel top-k: top-k of q / Exp(1)
        keys = draft.expand(rows, -1) / torch.empty(rows, vocab, dtype=draft.dtype).exponential_(
            generator=generator
        )
        values, tokens = keys.topk(min(k, vocab), dim=-1)
        return tokens, values > 0
    tokens = top_candidates(draft, k).expand(rows, -1)
    return tokens, torch.ones_like(tokens, dtype=torch.bool)


def _kl(target: torch.Tensor, law: torch.Tensor) -> float:
    """KL(p || law), +inf where law has no mass under p's."""
    law = law.double().clamp_min(0)
    support = target > 0
    if bool((law[support] <= 0).any()):
        return float("inf")
    return max(0.0, float((target[support] * (target[support] / law[support]).log()).sum()))


def _p_value(counts: torch.Tensor, law: torch.Tensor) -> float:
    """Chi-square p-value of token counts [V] against ``law`` [V], small cells pooled; 0 when a token
    outside the law's support was emitted."""
    total = float(counts.sum())
    law = law.double().clamp_min(0)
    law = law / law.sum()
    expected = law * total
    if bool((counts[law <= 0] > 0).any()):
        return 0.0
    big = expected >= MIN_EXPECTED
    observed = torch.cat([counts[big].double(), counts[~big].double().sum().reshape(1)])
    wanted = torch.cat([expected[big], expected[~big].sum().reshape(1)])
    keep = wanted > 0
    if int(keep.sum()) < 2:
        return 1.0
    statistic = float(((observed[keep] - wanted[keep]) ** 2 / wanted[keep]).sum())
    from scipy.stats import chi2  # here: importing the verifiers (every decoding job) needs no scipy

    return float(chi2.sf(statistic, int(keep.sum()) - 1))


def check_case(
    entry: Method, case: Case, options: dict, generator: torch.Generator, level: float, samples: int
):
    """One case's report (see the module docstring), the sampler run on ``samples`` rows."""
    law, acceptance = entry.law(case.target, case.draft, case.k, **options)
    law = torch.as_tensor(law, dtype=torch.float64)
    counts = torch.zeros(case.target.shape[0], dtype=torch.long)
    for start in range(0, samples, CHUNK):
        size = min(CHUNK, samples - start)
        candidates, valid = draw_candidates(entry.draws, case.draft, case.k, size, generator)
        rows = (case.target.expand(size, -1), case.draft.expand(size, -1))
        _, token = entry.verify(*rows, candidates, valid, generator, **options)
        counts += torch.bincount(token.long().cpu(), minlength=case.target.shape[0])
    p_value = _p_value(counts, law)
    kl = _kl(case.target, law)
    verdict = SAMPLER_DISAGREES if p_value < level else (INEXACT_LAW if kl > KL_TOL else EXACT)
    bound = bound_for(entry.draws, case.target, case.draft, case.k)
    return CaseReport(case.name, case.target.shape[0], case.k, kl, float(acceptance), bound, p_value, verdict)


def certify(
    method: str | Method, *, cases: list[Case] | None = None, seed: int = 0, samples: int = SAMPLES, **options
) -> Certificate:
    """Check ``method`` (a registered name or a ``Method``, registered or not) on ``cases`` (default:
    ``default_cases(seed)``), its sampler seeded from ``seed`` and run on ``samples`` rows per case (the
    power statement of the module docstring holds for ``SAMPLES``); ``options``: the method's own."""
    entry = get_method(method) if isinstance(method, str) else method
    options = entry.check_options(options)
    cases = default_cases(seed) if cases is None else list(cases)
    level = FAMILY_ALPHA / max(1, len(cases))
    certificate = Certificate(entry.name, entry.exact)
    for index, case in enumerate(cases):
        generator = torch.Generator().manual_seed(seed * 1_000_003 + index)
        certificate.cases.append(check_case(entry, case, options, generator, level, samples))
    return certificate
