"""Figure 3: the five disjoint parts of a step, and records written before the split."""

from __future__ import annotations

import pandas as pd
import pytest

from resispec.report.figures import OLD_SPLIT_NOTE, TIME_PARTS, figure3


def _rows(method: str, parts: dict[str, float]) -> list[dict]:
    return [{"method": method, "metric": m, "mean": v, "ci_low": v, "ci_high": v} for m, v in parts.items()]


def test_figure3_stacks_five_parts_and_marks_methods_without_the_commit_part():
    new = {
        "time_draft_s": 0.02,
        "time_target_s": 0.05,
        "time_verify_s": 0.004,
        "time_shaping_s": 0.003,
        "time_commit_s": 0.002,
    }
    old = {"time_draft_s": 0.02, "time_target_s": 0.05, "time_verify_s": 0.009}
    frame = pd.DataFrame(_rows("resispec", new) + _rows("specinfer", old))
    left = figure3(frame).axes[0]
    assert [t.get_text() for t in left.get_legend().get_texts()] == list(TIME_PARTS.values())
    assert len(left.containers) == 5
    widths = [[bar.get_width() for bar in container] for container in left.containers]  # [part][method]
    assert widths[4] == [2.0, 0.0] and widths[3] == [3.0, 0.0]  # milliseconds; old record: absent
    assert sum(w[0] for w in widths) == pytest.approx(sum(new.values()) * 1e3)
    labels = [t.get_text() for t in left.get_yticklabels()]
    assert labels == ["resispec", "specinfer *"]
    assert OLD_SPLIT_NOTE in [t.get_text() for t in left.texts]
