"""Internals of the ers planning pass: torch / numpy agreement and exactness of ratio binning."""

import numpy as np
import torch
from verify_cases import random_cases

from resispec.verify.sequential import plan_ers, plan_ers_small, ratio_bins, run_plan


def test_batched_torch_plan_matches_numpy_plan():
    """The batched torch planner and the 1-D numpy planner implement the same iteration."""
    for target, draft, k in random_cases(seed=21, count=60, vocab_range=(2, 40), k_range=(1, 11)):
        for damping in (0.0, 0.5):
            torch_future = plan_ers(target.unsqueeze(0), draft.unsqueeze(0), k, damping=damping)[:, 0]
            numpy_future = plan_ers_small(target.numpy(), draft.numpy(), k, damping=damping)
            np.testing.assert_allclose(torch_future.numpy(), numpy_future, atol=1e-12)


def test_batched_plan_equals_per_row_plans():
    cases = list(random_cases(seed=22, count=8, vocab_range=(30, 30), k_range=(4, 4)))
    targets = torch.stack([c[0] for c in cases])
    drafts = torch.stack([c[1] for c in cases])
    batched = plan_ers(targets, drafts, 4)  # [k, B]
    for row, (target, draft, _) in enumerate(cases):
        torch.testing.assert_close(batched[:, row], plan_ers(target, draft, 4), rtol=0, atol=1e-12)


def test_ratio_bins_are_exact_for_equal_ratio_groups():
    """Tokens sharing p/q aggregate exactly: the binned plan has the full plan's reaches for any T."""
    generator = torch.Generator().manual_seed(0)
    groups = torch.randint(0, 6, (500,), generator=generator)  # 6 ratio groups, e^1 apart
    draft = torch.rand(500, generator=generator, dtype=torch.float64)
    draft /= draft.sum()
    target = draft * torch.exp(groups.double() - 2.5)
    target /= target.sum()
    target_bins, draft_bins = ratio_bins(target, draft, 128)
    assert int((draft_bins > 0).sum()) == 6
    future = torch.tensor([0.9, 0.4, 0.1, 0.0], dtype=torch.float64)
    _, full_reaches, _ = run_plan(target, draft, future)
    _, binned_reaches, _ = run_plan(target_bins, draft_bins, future)
    torch.testing.assert_close(full_reaches, binned_reaches, rtol=0, atol=1e-12)
