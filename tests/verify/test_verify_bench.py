"""The verification benchmark runs end to end on small inputs and reads logged records."""

import pytest
import torch

from resispec.bench.__main__ import main as bench_main
from resispec.bench.pairs import load_records, zipf_pair


def test_bench_verify_prints_a_row_per_source_and_k(tmp_path, capsys):
    generator = torch.Generator().manual_seed(0)
    pairs = [zipf_pair(50, generator) for _ in range(3)]
    path = tmp_path / "records.pt"
    torch.save(
        {
            "target_probs": torch.stack([p for p, _ in pairs]),
            "draft_probs": torch.stack([q for _, q in pairs]),
        },
        path,
    )
    args = [
        "verify",
        "--vocab",
        "40",
        "--k",
        "2",
        "3",
        "--pairs",
        "2",
        "--timing-calls",
        "2",
        "--paths",
        "16",
        "--records",
        str(path),
    ]
    assert bench_main(args) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:3] == ["source", "k", "|"]
    assert lines[-1].startswith("no --target")
    rows = [line.split() for line in lines[1:-1]]
    assert [(r[0], r[1]) for r in rows] == [
        ("records", "2"),
        ("records", "3"),
        ("zipf", "V=40"),
        ("zipf", "V=40"),
    ]
    for row in rows:
        values = row[3:9] if row[0] == "records" else row[4:10]
        specinfer, sequoia, ers, resispec, optimal, bound = map(float, values)
        assert specinfer <= ers + 1e-12 <= optimal + 2e-12
        assert abs(optimal - bound) <= 1e-4  # printed to 4 decimals
        assert row[-1].count("/") == 2  # optimal's plan/selection/accept split


def test_tree_forward_is_timed_on_a_target_directory(tmp_path):
    """The yardstick of opt/fwd: a real forward over d2b2's 3 nodes of a tiny saved target."""
    from resispec.bench.forward import tree_forward_seconds
    from resispec.models.tiny import build

    target = build("layers=1,hidden=32", tmp_path / "tiny")
    seconds = tree_forward_seconds(str(target), tree="d2b2", prefix=8, repeats=2, warmup=1)
    assert 0 < seconds < 60
    with pytest.raises(ValueError, match="need prefix >= 1"):
        tree_forward_seconds(str(target), prefix=0)


def test_load_records_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_records(tmp_path / "missing.pt")
    path = tmp_path / "bad.pt"
    torch.save({"target_probs": torch.ones(2, 3) / 3}, path)
    with pytest.raises(ValueError, match="missing key 'draft_probs'"):
        load_records(path)
