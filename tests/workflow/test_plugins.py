"""The config's ``plugins``: imported before the sheets are validated, so that a sheet may name the
methods they register; a plugin that fails to import or registers nothing is an error naming it."""

from pathlib import Path

import pytest

from resispec.workflow.config import ConfigError, validate_config
from resispec.workflow.plugins import forget_plugin, load_plugin
from resispec.workflow.sheets import SheetError, expand_jobs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_verifiers.py"
HEADER = "row\ttarget\tdraft\tdataset\ttemperature\ttree\tmethods"
MODELS = {"t": {"source": "hf:a/b"}, "d": {"source": "hf:a/c"}}


def config(tmp_path, methods: str, plugins: list[str]) -> dict:
    sheet = tmp_path / "sheet.tsv"
    sheet.write_text(f"{HEADER}\na\tt\td\tc4\t1\td3b2\t{methods}\n")
    raw = {"models": MODELS, "data": {"datasets": ["c4"]}, "experiments": {"table1": str(sheet)}}
    return validate_config({**raw, "plugins": plugins})


@pytest.fixture
def example():
    yield str(EXAMPLE)
    forget_plugin(str(EXAMPLE))


def test_a_sheet_names_a_plugin_method(tmp_path, example):
    """With the example plugin in ``plugins``, a sheet's ``methods`` may name first_candidate."""
    jobs = expand_jobs(config(tmp_path, "specinfer,first_candidate", [example]))
    assert [job.method for job in jobs][:2] == ["specinfer", "first_candidate"]


def test_a_relative_and_an_absolute_entry_are_one_plugin(tmp_path, monkeypatch, example):
    """The .test config names the example by a relative path, the tests by its absolute one: forgetting
    either forgets both, and loading it again after its methods were unregistered registers them again
    (a stale cache once left a sheet naming first_candidate rejected, depending on test order)."""
    from resispec.verify.registry import names

    monkeypatch.chdir(EXAMPLE.parents[1])
    relative = "examples/my_verifiers.py"
    assert load_plugin(relative) == ("first_candidate",) and load_plugin(example) == ("first_candidate",)
    forget_plugin(example)
    assert "first_candidate" not in names()
    assert load_plugin(relative) == ("first_candidate",) and "first_candidate" in names()
    jobs = expand_jobs(config(tmp_path, "specinfer,first_candidate", [relative]))
    assert [job.method for job in jobs][:2] == ["specinfer", "first_candidate"]


def test_without_the_plugin_the_method_is_unknown(tmp_path):
    """The same sheet without the plugin is rejected at the ``methods`` column."""
    with pytest.raises(SheetError, match="column 'methods': 'specinfer,first_candidate' does not match"):
        expand_jobs(config(tmp_path, "specinfer,first_candidate", []))


def test_a_plugin_that_fails_to_import_is_named(tmp_path):
    """A module that is not there, or raises at import, is an error naming the entry."""
    with pytest.raises(ConfigError, match="'no_such_verifiers_module' failed to import: ModuleNotFoundError"):
        expand_jobs(config(tmp_path, "specinfer", ["no_such_verifiers_module"]))
    broken = tmp_path / "broken_verifiers.py"
    broken.write_text("raise RuntimeError('half written')\n")
    with pytest.raises(
        ConfigError, match=r"broken_verifiers.py' failed to import: RuntimeError: half written"
    ):
        expand_jobs(config(tmp_path, "specinfer", [str(broken)]))


def test_a_plugin_that_registers_nothing_is_named(tmp_path):
    """A module that imports but registers no method is an error naming it."""
    empty = tmp_path / "empty_verifiers.py"
    empty.write_text("import torch\n")
    with pytest.raises(ConfigError, match=r"empty_verifiers.py' registered no verification method"):
        load_plugin(str(empty))


def test_the_schema_describes_plugins():
    """``plugins`` is a list of strings, default empty, with a description."""
    from resispec.workflow.config import load_schema

    entry = load_schema()["properties"]["plugins"]
    assert (
        entry["default"] == [] and entry["items"]["type"] == "string" and "register" in entry["description"]
    )
    with pytest.raises(ConfigError, match="config key 'plugins"):
        validate_config({"plugins": "my_verifiers"})
