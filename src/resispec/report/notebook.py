"""Execute ``notebooks/results.ipynb`` (or any notebook) with injected parameters, via nbclient.

Parameters are injected papermill-style: a new code cell tagged ``injected-parameters`` right after the
cell tagged ``parameters`` (or at the top when there is none), assigning each parameter's ``repr``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient


def parameter_cell(params: dict) -> nbformat.NotebookNode:
    """A code cell assigning ``params``; names must be identifiers, values must round-trip through repr."""
    lines = ["# Injected by resispec.report.notebook.execute_notebook"]
    for name, value in params.items():
        if not str(name).isidentifier():
            raise ValueError(f"notebook parameter name {name!r} is not a Python identifier")
        if not isinstance(value, str | int | float | bool | type(None) | list | dict | tuple):
            raise ValueError(f"notebook parameter {name!r} has unsupported type {type(value).__name__}")
        lines.append(f"{name} = {value!r}")
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = ["injected-parameters"]
    return cell


def inject_parameters(notebook: nbformat.NotebookNode, params: dict) -> nbformat.NotebookNode:
    """Insert the parameter cell after the cell tagged 'parameters' (in place; returns the notebook)."""
    index = next(
        (
            i + 1
            for i, cell in enumerate(notebook.cells)
            if "parameters" in cell.get("metadata", {}).get("tags", [])
        ),
        0,
    )
    notebook.cells.insert(index, parameter_cell(params))
    return notebook


def execute_notebook(
    path,
    out_path,
    params: dict | None = None,
    *,
    cwd=None,
    timeout: int = 600,
    kernel_name: str | None = None,
) -> Path:
    """Run the notebook at ``path`` with ``params``; write the executed copy (with outputs) to ``out_path``.

    ``cwd`` is the kernel's working directory (default: the current one, so relative paths in ``params``
    resolve as for the caller). Raises ``nbclient.exceptions.CellExecutionError`` when a cell fails.
    """
    path, out_path = Path(path), Path(out_path)
    if not path.is_file():
        raise ValueError(f"notebook not found: {path}")
    notebook = inject_parameters(nbformat.read(path, as_version=4), params or {})
    kernel = kernel_name or notebook.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name=kernel,
        resources={"metadata": {"path": str(cwd or Path.cwd())}},
    )
    client.execute()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, out_path)
    return out_path
