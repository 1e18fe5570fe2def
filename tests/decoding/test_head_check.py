"""The target's head check (``decoding.target``): whether output_embeddings(last hidden state) reproduces
the model's logits is decided once per model, with a tolerance of the model's dtype: a 16-bit model whose
own projection rounds differently from the head's (as a GPU's batched and single-row matmuls do) keeps
the head, a soft-capped head is refused in every dtype, and later prompts do not decide again (a flip
would change the compiled forward's key inside a timed prompt)."""

from __future__ import annotations

import pytest
import torch
from tiny_models import tiny_llama

from resispec.decoding import target as target_module
from resispec.decoding.target import head_reproduces, head_tolerance, new_target
from resispec.decoding.trees import complete


class _Head(torch.nn.Linear):
    """The model's own projection (3-D input) differs from the head's (1-D or 2-D input) by ``change``."""

    def __init__(self, linear: torch.nn.Linear, change) -> None:
        super().__init__(linear.in_features, linear.out_features, bias=False)
        self.weight, self.change = linear.weight, change

    def forward(self, x):
        y = super().forward(x)
        return self.change(y) if x.dim() == 3 else y


def one_rounding(y):  # a relative change of 2^-8, one bfloat16 rounding step at most
    return (y.float() * (1 + 2**-8)).to(y.dtype)


def soft_cap(y, cap=1.0):
    return (cap * torch.tanh(y.float() / cap)).to(y.dtype)


def _model(dtype, change):
    model = tiny_llama(0, vocab=64, init=0.6).to(dtype)
    model.lm_head = _Head(model.lm_head, change)
    return model


@torch.no_grad()
def _prefilled_head(model, prompt):
    target = new_target(model, complete(2, 2), torch.device("cpu"), False, 1.0, capacity=32)
    target.prefill(prompt)
    return target.head


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_16_bit_rounding_difference_keeps_the_head(dtype):
    assert _prefilled_head(_model(dtype, one_rounding), torch.tensor([1, 5, 3, 7, 9])) is not None


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_a_soft_capped_head_is_refused(dtype):
    assert _prefilled_head(_model(dtype, soft_cap), torch.tensor([1, 5, 3, 7, 9])) is None


def test_tolerance_follows_the_dtype():
    logits = torch.linspace(-8, 12, 50)
    assert head_tolerance(torch.float32) == 1e-3
    assert head_tolerance(torch.bfloat16) == 8 * 2**-7 and head_tolerance(torch.float16) == 8 * 2**-10
    bumped = one_rounding(logits.bfloat16())
    assert head_reproduces(bumped, logits.bfloat16(), torch.bfloat16)
    assert not head_reproduces(bumped.float(), logits.bfloat16().float(), torch.float32)
    assert not head_reproduces(soft_cap(logits, 10.0), logits, torch.bfloat16)


def test_the_check_runs_once_per_model(monkeypatch):
    calls = []
    original = target_module.head_reproduces

    def counted(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(target_module, "head_reproduces", counted)
    model = tiny_llama(0, vocab=64)
    heads = [_prefilled_head(model, torch.arange(1, n)) for n in (3, 6, 11, 2)]  # the last: 1 token
    assert len(calls) == 1 and all(head is not None for head in heads)
