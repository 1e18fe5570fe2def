"""Work a training job does once: the frozen target's side of the acceptance measured before and after
training (one forward per held-out batch), and the division by T = 1 left out of the temperature-scaled
losses, both bitwise the results of the plain formulas."""

import pytest
import torch
from transformers import LlamaForCausalLM

from resispec.models import acceptance, distill, draft_init, eagle_head, eagle_training
from resispec.models.loading import load_model


class CountingTarget(torch.nn.Module):
    """A model whose forwards are counted."""

    def __init__(self, model):
        super().__init__()
        self.model, self.calls = model, 0

    @property
    def device(self):
        return self.model.device

    def forward(self, **kwargs):
        self.calls += 1
        return self.model(**kwargs)


@pytest.fixture(scope="module")
def target(tiny_target):
    return load_model(tiny_target)


def _contexts(tiny_tokens):
    return [tiny_tokens[10][:20], tiny_tokens[11][:20], tiny_tokens[10][:9], tiny_tokens[11][20:29]]


def test_heldout_target_runs_the_target_once_per_batch_for_every_later_draft(target, tiny_tokens):
    counting = CountingTarget(target)
    contexts = _contexts(tiny_tokens)
    held = acceptance.HeldoutTarget(counting, contexts, batch_size=8)
    assert counting.calls == 2 and held.positions == 2 * 20 + 2 * 9  # two lengths, two batches
    drafts = [
        LlamaForCausalLM(draft_init.make_draft_config(target.config, layers=1, hidden=32)).eval()
        for _ in range(2)
    ]
    for draft in drafts:  # a draft before and after training: the target's forwards are not repeated
        expected = acceptance.measure_acceptances(target, draft, contexts, [1.0, 0.6, 0.0])
        assert acceptance.acceptances(held, draft, [1.0, 0.6, 0.0]) == expected  # bitwise
    assert counting.calls == 2
    with pytest.raises(ValueError, match="contexts is empty"):
        acceptance.HeldoutTarget(target, [])


def test_eagle_heads_read_the_kept_target_outputs_bitwise(target, tiny_tokens):
    counting = CountingTarget(target)
    contexts = _contexts(tiny_tokens)
    held = acceptance.HeldoutTarget(counting, contexts, features=True)
    for seed in (0, 1):
        head = eagle_head.new_eagle_head(target, torch.Generator().manual_seed(seed)).eval()
        expected = _eagle_acceptances_in_one_pass(target, head, contexts, [1.0, 0.6])
        assert eagle_training.head_acceptances(held, head, [1.0, 0.6]) == expected
        assert eagle_training.measure_acceptances(target, head, contexts, [1.0, 0.6]) == expected
    assert counting.calls == 2
    with pytest.raises(ValueError, match="at least 2 tokens"):
        eagle_training.measure_acceptances(target, head, [tiny_tokens[0][:1]], [1.0])


def _eagle_acceptances_in_one_pass(target, head, contexts, temperatures):
    """The head's acceptance with the target run beside it, batch by batch (the formula before the kept
    outputs)."""
    totals, count = dict.fromkeys(temperatures, 0.0), 0
    with torch.no_grad():
        for ids in acceptance.same_length_batches([torch.tensor(c) for c in contexts]):
            out = target(input_ids=ids, output_hidden_states=True)
            _, head_logits = head(ids[:, 1:], out.hidden_states[-1][:, :-1])
            for t in temperatures:
                shared = acceptance.overlap(out.logits[:, 1:].float(), head_logits.float(), t)
                totals[t] += float(shared.sum())
            count += ids.shape[0] * (ids.shape[1] - 1)
    return {t: total / count for t, total in totals.items()}


def test_tempered_leaves_out_only_the_division_by_one():
    logits = torch.randn(3, 5, 50, generator=torch.Generator().manual_seed(0)) * 30
    assert acceptance.tempered(logits, 1.0) is logits
    assert torch.equal(acceptance.tempered(logits, 1.0), logits / 1.0)
    assert torch.equal(acceptance.tempered(logits, 0.6), logits / 0.6)


@pytest.mark.parametrize("temperature", [1.0, 0.6])
def test_distillation_loss_and_gradient_are_bitwise_the_divided_formula(temperature):
    generator = torch.Generator().manual_seed(1)
    logits = (torch.randn(2, 7, 40, generator=generator) * 4).requires_grad_()
    top = torch.softmax(torch.randn(2, 7, 5, generator=generator), -1).half() * 0.9
    indices = torch.randint(0, 40, (2, 7, 5), generator=generator)
    loss = distill.distill_loss(logits, top, indices, temperature=temperature, kind="kl+tv")
    (grad,) = torch.autograd.grad(loss, logits)
    # the formula's log q_T with the division written out, as before `tempered`
    plain = logits.detach().clone().requires_grad_()
    divided = _divided_loss(plain, top, indices, temperature)
    (plain_grad,) = torch.autograd.grad(divided, plain)
    assert torch.equal(loss, divided) and torch.equal(grad, plain_grad)


def _divided_loss(logits, top, indices, temperature):
    """`distill.distill_loss` (kind kl+tv, full vocabulary) with log_softmax(logits / T) written out."""
    target_top = top.float()
    target_tail = (1.0 - top.float().sum(-1)).clamp_min(0.0)
    total = (target_top.sum(-1) + target_tail).clamp_min(1e-12)
    target_top, target_tail = target_top / total[..., None], target_tail / total
    draft_log = (logits.float() / temperature).log_softmax(-1).gather(-1, indices)
    draft_top = draft_log.exp()
    draft_tail = (1.0 - draft_top.sum(-1)).clamp_min(distill.MIN_TAIL_PROB)
    kl = (target_top * (target_top.clamp_min(1e-12).log() - draft_log)).sum(-1)
    kl = kl + target_tail * (target_tail.clamp_min(1e-12).log() - draft_tail.log())
    overlap = torch.minimum(target_top, draft_top).sum(-1) + torch.minimum(target_tail, draft_tail)
    return torch.zeros((), dtype=torch.float32) + kl.mean() + (1.0 - overlap).mean()


def test_teacher_probabilities_are_bitwise_the_divided_formula(target, tiny_tokens):
    chunks = torch.tensor([tiny_tokens[0][:32], tiny_tokens[1][:32]])
    targets = distill.teacher_topk(target, chunks, top_k=5, temperatures=(1.0, 0.6), amp=False)
    with torch.no_grad():
        logits = target(input_ids=chunks).logits.float()
    top = logits.topk(5, dim=-1)
    for t in (1.0, 0.6):
        log_probs = top.values / t - (logits / t).logsumexp(-1, keepdim=True)
        assert torch.equal(targets.probs[t], log_probs.exp().to(torch.float16))
