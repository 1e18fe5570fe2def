"""Distillation pieces: the losses against hand-computed values, the teacher pass, held-out documents,
budgets and the schedule."""

import pytest
import torch

from resispec.models import distill, training
from resispec.models.loading import load_model

V = 6


def _law(generator, shape=(2, 3, V)) -> torch.Tensor:
    return torch.softmax(torch.randn(shape, generator=generator, dtype=torch.float64) * 2, -1)


def test_full_top_k_kl_and_tv_equal_their_definitions():
    g = torch.Generator().manual_seed(0)
    p, q = _law(g), _law(g)  # [B, S, V]
    top = p.topk(V, dim=-1)  # k = V: no tail
    logits = q.log().float()
    kl = distill.distill_loss(logits, top.values, top.indices, kind="kl")
    tv = distill.distill_loss(logits, top.values, top.indices, kind="tv")
    assert float(kl) == pytest.approx(float((p * (p / q).log()).sum(-1).mean()), rel=1e-5)
    assert float(tv) == pytest.approx(float(0.5 * (p - q).abs().sum(-1).mean()), rel=1e-5)
    both = distill.distill_loss(logits, top.values, top.indices, kind="kl+tv")
    assert float(both) == pytest.approx(float(kl) + float(tv), rel=1e-6)


def test_reduced_vocabulary_loss_targets_the_renormalised_restriction():
    """Vocabulary {0, 2, 3, 5}: q = p restricted and renormalised gives zero KL and TV; a top-2 target
    keeps its tail as one bucket."""
    g = torch.Generator().manual_seed(1)
    p = _law(g)
    kept = torch.tensor([0, 2, 3, 5])
    positions = torch.full((V,), -1)
    positions[kept] = torch.arange(4)
    restricted = p[..., kept] / p[..., kept].sum(-1, keepdim=True)  # [B, S, 4]
    top = p.topk(V, dim=-1)
    for kind in ("kl", "tv"):
        loss = distill.distill_loss(
            restricted.log().float(), top.values, top.indices, kind=kind, positions=positions
        )
        assert float(loss) == pytest.approx(0.0, abs=1e-6), kind
    uniform = torch.zeros(2, 3, 4)
    top2 = p.topk(2, dim=-1)
    inside = positions[top2.indices] >= 0
    p_top = top2.values * inside
    tail = 1 - top2.values.sum(-1)
    total = p_top.sum(-1) + tail
    p_top, tail = p_top / total[..., None], tail / total
    q_tail = 1 - 0.25 * inside.sum(-1)
    expected = 1 - (torch.minimum(p_top, torch.tensor(0.25)) * inside).sum(-1) - torch.minimum(tail, q_tail)
    loss = distill.distill_loss(uniform, top2.values, top2.indices, kind="tv", positions=positions)
    assert float(loss) == pytest.approx(float(expected.mean()), rel=1e-5)


def test_teacher_targets_are_the_tempered_top_k(tiny_target, tiny_tokens):
    target = load_model(tiny_target)
    chunks = torch.tensor(tiny_tokens[0][:64]).view(2, 32)
    targets = distill.teacher_topk(target, chunks, top_k=5, temperatures=(1.0, 0.6), amp=False)
    with torch.no_grad():
        logits = target(input_ids=chunks).logits  # [2, 32, V]
    for t in (1.0, 0.6):
        expected = torch.softmax(logits / t, -1).topk(5, -1)
        torch.testing.assert_close(targets.probs[t].float(), expected.values, atol=1e-3, rtol=1e-3)
        assert torch.equal(targets.indices.long(), expected.indices)
    assert targets.features is None and torch.equal(targets.tokens, chunks)


def test_heldout_documents_are_every_twentieth_and_never_trained_on():
    docs = [[i, i + 1, i + 2] for i in range(50)]
    train, held = distill.split_heldout(docs)
    assert [d[0] for d in held] == [0, 20, 40]
    assert len(train) == 47 and not any(d in train for d in held)
    with pytest.raises(ValueError, match="1 documents"):
        distill.split_heldout(docs[:1])


def test_teacher_budget_takes_a_seeded_subset_of_whole_chunks():
    chunks = torch.arange(40).view(10, 4)
    first = distill.teacher_chunks(chunks, 13, 0)
    again = distill.teacher_chunks(chunks, 13, 0)
    assert first.shape == (3, 4) and torch.equal(first, again)
    assert distill.teacher_chunks(chunks, 10**6, 0).shape == (10, 4)


def test_budgets_are_steps_and_tokens_with_clear_errors():
    opts = training.TrainOptions(steps=10, batch_size=2, seq_len=16, temperatures=[1, 0.6])
    assert opts.train_tokens == 320 and opts.temperatures == (1.0, 0.6)
    assert not hasattr(opts, "minutes_budget")
    for bad, message in [
        ({"steps": 0}, "steps must be a positive integer, got 0"),
        ({"teacher_tokens": 2.5}, "teacher_tokens must be a positive integer"),
        ({"loss": "ce"}, "loss 'ce' must be one of"),
        ({"temperatures": (0,)}, "temperatures must be positive"),
    ]:
        with pytest.raises(ValueError, match=message):
            training.TrainOptions(**bad)


def test_schedule_and_batches_depend_on_the_step_only():
    assert training.lr_factor(1, 100, warmup=10) == pytest.approx(
        0.1 * (0.1 + 0.9 * 0.5 * (1 + 0.99951)), rel=1e-3
    )
    assert training.lr_factor(100, 100) == pytest.approx(training.FINAL_LR_FRACTION)
    opts = training.TrainOptions(steps=7, batch_size=3)
    runs = [list(training.batches(8, opts, torch.Generator().manual_seed(4))) for _ in range(2)]
    assert all(torch.equal(a, b) for a, b in zip(*runs, strict=True)) and len(runs[0]) == 7
    epoch = torch.cat(runs[0][:2])  # the first two batches of an epoch are distinct rows
    assert len(set(epoch.tolist())) == 6
