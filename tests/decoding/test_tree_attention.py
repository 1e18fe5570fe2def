"""One tree forward on a cached prefix gives the same logits as running each root-to-node path alone."""

import pytest
import torch
from transformers import DynamicCache

from resispec.decoding import trees
from resispec.decoding.kv_cache import keep_positions
from resispec.decoding.tree_attention import tree_mask


def _tree_logits(model, prefix, tree, tokens):
    cache = DynamicCache(config=model.config)
    model(input_ids=prefix[None], cache=cache)
    nodes = torch.arange(tree.num_nodes)
    mask = tree_mask(tree.ancestor_matrix(), nodes, nodes[:0], len(prefix), torch.float32)
    positions = (torch.tensor(tree.depths) + len(prefix))[None]
    out = model(input_ids=tokens[None], attention_mask=mask, position_ids=positions, cache=cache)
    return out.logits[0], cache


@torch.no_grad()
def test_tree_logits_equal_per_path_logits(target_model):
    tree = trees.from_paths([[0], [1], [2], [0, 0], [0, 1], [2, 0], [0, 0, 0], [0, 1, 0]])
    gen = torch.Generator().manual_seed(3)
    prefix = torch.randint(0, 12, (5,), generator=gen)
    tokens = torch.randint(0, 12, (tree.num_nodes,), generator=gen)
    tree_logits, _ = _tree_logits(target_model, prefix, tree, tokens)
    for node in range(tree.num_nodes):
        path_ids = torch.cat([prefix, tokens[tree.path_to(node)]])
        reference = target_model(input_ids=path_ids[None]).logits[0, -1]
        torch.testing.assert_close(tree_logits[node], reference, atol=1e-4, rtol=0)


@torch.no_grad()
def test_cache_cut_to_accepted_path_continues_like_recompute(target_model):
    tree = trees.complete(3, 2)
    gen = torch.Generator().manual_seed(4)
    prefix = torch.randint(0, 12, (4,), generator=gen)
    tokens = torch.randint(0, 12, (tree.num_nodes,), generator=gen)
    _, cache = _tree_logits(target_model, prefix, tree, tokens)
    path = tree.path_to(5)  # root -> second child -> its first child
    keep_positions(cache, torch.cat([torch.arange(len(prefix)), len(prefix) + torch.tensor(path)]))
    assert cache.get_seq_length() == len(prefix) + len(path)
    nxt = torch.tensor([7])
    cached = target_model(input_ids=nxt[None], cache=cache).logits[0, -1]
    full = target_model(input_ids=torch.cat([prefix, tokens[path], nxt])[None]).logits[0, -1]
    torch.testing.assert_close(cached, full, atol=1e-4, rtol=0)


@torch.no_grad()
def test_crop_path_for_contiguous_prefix(target_model):
    cache = DynamicCache(config=target_model.config)
    target_model(input_ids=torch.arange(6)[None], cache=cache)
    keep_positions(cache, torch.arange(4))
    assert cache.get_seq_length() == 4
    cached = target_model(input_ids=torch.tensor([[9]]), cache=cache).logits[0, -1]
    full = target_model(input_ids=torch.tensor([[0, 1, 2, 3, 9]])).logits[0, -1]
    torch.testing.assert_close(cached, full, atol=1e-4, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_prefix_mask_equals_tree_mask_for_every_prefix_length(dtype):
    """The per-run mask buffer gives exactly tree_mask's mask, also after it grows."""
    from resispec.decoding.tree_attention import PrefixMask

    tree = trees.complete(3, 2)
    ancestors = tree.ancestor_matrix()
    queries, cached = torch.tensor([3, 4, 5, 6]), torch.tensor([1, 2])
    mask = PrefixMask(ancestors, queries, cached, dtype, capacity=4)
    for prefix_len in (0, 3, 4, 9, 40):
        assert torch.equal(mask(prefix_len), tree_mask(ancestors, queries, cached, prefix_len, dtype))
