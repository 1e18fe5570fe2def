"""notebooks/results.ipynb: kept without outputs, and it executes against the tidy tables."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from resispec.report.notebook import execute_notebook, parameter_cell

NOTEBOOK = Path(__file__).parents[2] / "notebooks" / "results.ipynb"


def test_notebook_is_stored_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    assert any("parameters" in cell.metadata.get("tags", []) for cell in code)


def test_notebook_executes_and_redraws_the_figures(synthetic_results, tmp_path):
    params = {
        "tables_dir": str(synthetic_results["tables"]),
        "nodes_path": str(synthetic_results["nodes"]),
        "figures_dir": str(tmp_path / "figures"),
    }
    out = execute_notebook(NOTEBOOK, tmp_path / "results.ipynb", params, timeout=300)
    executed = nbformat.read(out, as_version=4)
    images = [
        o
        for c in executed.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert len(images) == 6
    assert sorted(p.name for p in (tmp_path / "figures").glob("*.png")) == sorted(
        f"{n}.png" for n in ("figure1", "figure3", "table3_plot", "table5_plot", "audit_scatter", "audit_kl")
    )
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and repr(params["tables_dir"]) in injected[0].source


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="'tables dir'"):
        parameter_cell({"tables dir": "x"})
    with pytest.raises(ValueError, match="unsupported type"):
        parameter_cell({"path": object()})
