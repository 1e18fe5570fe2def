"""Children draws and the EAGLE drafter (against a tiny randomly initialised head that follows the
documented protocol in resispec.decoding.drafters.eagle)."""

import pytest
import torch
from torch import nn
from transformers import DynamicCache

from resispec.decoding import trees
from resispec.decoding.drafters import EagleDrafter, draw_children
from resispec.decoding.engine import generate
from resispec.models import eagle_head

PROMPT = torch.tensor([1, 5, 3, 7])


def test_without_replacement_draws_distinct_and_flags_missing_support():
    probs = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.0, 0.0, 1.0, 0.0]])
    tokens, valid = draw_children(probs, 3, "without_replacement", torch.Generator().manual_seed(0))
    assert sorted(tokens[0].tolist()) == [0, 1, 2] and valid[0].all()
    assert tokens[1, 0] == 2 and valid[1].tolist() == [True, False, False]


def test_gumbel_topk_first_draw_follows_q():
    probs = torch.tensor([0.6, 0.3, 0.1]).expand(20000, -1)
    tokens, _ = draw_children(probs, 2, "without_replacement", torch.Generator().manual_seed(1))
    freq = torch.bincount(tokens[:, 0], minlength=3) / 20000
    torch.testing.assert_close(freq, torch.tensor([0.6, 0.3, 0.1]), atol=0.015, rtol=0)  # ~5 sigma
    second = torch.bincount(tokens[tokens[:, 0] == 0, 1], minlength=3).float()
    torch.testing.assert_close(second / second.sum(), torch.tensor([0.0, 0.75, 0.25]), atol=0.02, rtol=0)


def test_deterministic_and_bad_draws():
    probs = torch.tensor([[0.1, 0.6, 0.3]])
    tokens, _ = draw_children(probs, 2, "greedy", torch.Generator())
    assert tokens.tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="draws"):
        draw_children(probs, 2, "sometimes", torch.Generator())


class TinyHead(nn.Module):
    """EAGLE-1 shaped head: fc(concat(embed(token), feature)) -> one Llama layer -> lm_head."""

    def __init__(self, target):
        from transformers import LlamaConfig, LlamaModel

        super().__init__()
        cfg = target.config
        hidden = cfg.hidden_size
        small = LlamaConfig(**{**cfg.to_dict(), "num_hidden_layers": 1})
        torch.manual_seed(7)
        self.embed = target.get_input_embeddings()
        self.fc = nn.Linear(2 * hidden, hidden)
        self.body = LlamaModel(small).eval()
        self.lm_head = target.get_output_embeddings()

    def forward(self, token_ids, target_features, cache, *, position_ids=None, attention_mask=None):
        embeds = self.fc(torch.cat([self.embed(token_ids), target_features], dim=-1))
        out = self.body(
            inputs_embeds=embeds, cache=cache, position_ids=position_ids, attention_mask=attention_mask
        ).last_hidden_state
        return out, self.lm_head(out)


@torch.no_grad()
def test_eagle_tree_probs_equal_sequential_head_runs(target_model):
    head = TinyHead(target_model).eval()
    drafter = EagleDrafter(head, cache_factory=DynamicCache)
    feats = target_model(input_ids=PROMPT[None], output_hidden_states=True).hidden_states[-1][0]  # [L, H]
    drafter.update(PROMPT, (), feats[:-1])
    tree = trees.complete(3, 2)
    draft = drafter.propose(
        PROMPT, tree, draws="with_replacement", temperature=1.0, generator=torch.Generator()
    )
    node = tree.children[tree.children[0][1]][0]  # depth 2 under the second child (not a forwarded node)
    parent = tree.parents[node]
    pos = lambda n: torch.arange(n)[None]  # noqa: E731
    seq_tokens, seq_feats = PROMPT[1:], feats[:-1]
    f_root = head(seq_tokens[None], seq_feats[None], None, position_ids=pos(3))[0][0, -1]
    ids = torch.cat([seq_tokens, draft.tokens[[parent]]])
    f_parent, logits = head(ids[None], torch.cat([seq_feats, f_root[None]])[None], None, position_ids=pos(4))
    torch.testing.assert_close(draft.draft_probs[parent], torch.softmax(logits[0, -1], -1), atol=1e-5, rtol=0)
    assert draft.draft_probs.shape[0] == 3 <= node  # last-level nodes are not forwarded: no row


@pytest.mark.parametrize("tree", ["d4b2", "chain3"])
def test_eagle_drafter_greedy_equals_hf(target_model, tree):
    ref = target_model.generate(PROMPT[None], max_new_tokens=16, do_sample=False, eos_token_id=None)[0, 4:]
    drafter = EagleDrafter(TinyHead(target_model).eval(), cache_factory=DynamicCache)
    out = generate(
        target_model, drafter, PROMPT, tree=tree, temperature=0, max_new_tokens=16, eos_token_id=[]
    )
    assert torch.equal(out.tokens, ref)


def test_eagle_drafter_samples_and_rejects_missing_features(target_model):
    drafter = EagleDrafter(TinyHead(target_model).eval(), cache_factory=DynamicCache)
    out = generate(
        target_model,
        drafter,
        PROMPT,
        method="specinfer",
        tree="d3b2",
        max_new_tokens=12,
        generator=torch.Generator().manual_seed(0),
        eos_token_id=[],
    )
    assert len(out.tokens) == 12
    with pytest.raises(ValueError, match="target_features"):
        drafter.update(PROMPT, (), None)


@pytest.mark.parametrize("tree", ["d4b2", "d3b3"])
def test_eagle_drafter_with_the_package_head_greedy_equals_hf(target_model, tree):
    head = eagle_head.new_eagle_head(target_model, torch.Generator().manual_seed(0)).eval()
    ref = target_model.generate(PROMPT[None], max_new_tokens=16, do_sample=False, eos_token_id=None)[0, 4:]
    out = generate(
        target_model, EagleDrafter(head), PROMPT, tree=tree, temperature=0, max_new_tokens=16, eos_token_id=[]
    )
    assert torch.equal(out.tokens, ref)


@torch.no_grad()
def test_eagle_tree_probs_with_the_package_head(target_model):
    head = eagle_head.new_eagle_head(target_model, torch.Generator().manual_seed(1)).eval()
    drafter = EagleDrafter(head)
    feats = target_model(input_ids=PROMPT[None], output_hidden_states=True).hidden_states[-1][0]
    drafter.update(PROMPT, (), feats[:-1])
    tree = trees.complete(3, 2)
    draft = drafter.propose(
        PROMPT, tree, draws="without_replacement", temperature=1.0, generator=torch.Generator()
    )
    parent = tree.children[0][1]
    f_root = head(PROMPT[None, 1:], feats[None, :-1])[0][0, -1]
    ids = torch.cat([PROMPT[1:], draft.tokens[[parent]]])
    _, logits = head(ids[None], torch.cat([feats[:-1], f_root[None]])[None])
    torch.testing.assert_close(draft.draft_probs[parent], torch.softmax(logits[0, -1], -1), atol=1e-5, rtol=0)
