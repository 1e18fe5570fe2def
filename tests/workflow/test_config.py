"""The config schema: defaults filled from the schema, errors that name the bad key."""

import pytest

from resispec.workflow.config import ConfigError, load_config, load_schema, validate_config
from resispec.workflow.plugins import forget_plugin
from resispec.workflow.sheets import SheetError, expand_jobs, load_sheet


def _walk(schema, path=""):
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}{name}", sub
        yield from _walk(sub, f"{path}{name}.")


def test_every_key_has_description_and_default():
    schema = load_schema()
    for key, sub in _walk(schema):
        assert sub.get("description"), f"schema key {key} has no description"
        assert "default" in sub, f"schema key {key} has no default"


def test_defaults_come_from_the_schema():
    config = validate_config({})
    assert (
        config["data"]["num_prompts"]
        == load_schema()["properties"]["data"]["properties"]["num_prompts"]["default"]
    )
    assert config["device"] == "cpu"


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"devcie": "cpu"}, "devcie"),
        ({"threads": "two"}, "threads"),
        ({"data": {"num_prompts": 0}}, "data.num_prompts"),
        ({"data": {"datasets": ["imdb"]}}, "data.datasets.0"),
        ({"models": {"m": {"source": "ftp:x"}}}, "models.m.source"),
        ({"models": {"m": {"train": {"target": "t", "layer": 2}}}}, "models.m.train.layer"),
        ({"testing": {"fail_once_runs": "sequoia("}}, "testing.fail_once_runs"),
        ({"run_name": "my run/1"}, "run_name"),  # names the file results_dir/environment/RUN_NAME.json
    ],
)
def test_bad_key_or_type_is_named(config, key):
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        validate_config(config)


def test_shipped_configs_validate():
    for path in ("config/config.yaml", ".test/config.yaml"):
        config = load_config(path)
        try:
            jobs = expand_jobs(config)
        finally:  # the .test config's plugin: registered here only, for the tests after it on this worker
            for entry in config["plugins"]:
                forget_plugin(entry)
        assert {job.table for job in jobs} >= {f"table{i}" for i in range(1, 7)} | {"figure1", "figure3"}
        assert all("ers" in {j.method for j in jobs if j.run == job.run} for job in jobs)
        assert all("optimal" in {j.method for j in jobs if j.run == job.run} for job in jobs)


def _sheet(tmp_path, body):
    path = tmp_path / "sheet.tsv"
    header = "row\ttarget\tdraft\tdataset\ttemperature\ttree\tmethods\n"
    path.write_text(header + body)
    return path


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            "a\tt\td\tc4\t1\td5b3\tspecinfer\nb\tt\td\tc4\thot\td5b3\tspecinfer\n",
            "row 2 .*column 'temperature'",
        ),
        ("a\tt\td\tc4\t1\tblob\tspecinfer\n", "row 1 .*column 'tree'"),
        ("a\tt\td\tc4\t1\td5b3\tmagic\n", "row 1 .*column 'methods'"),
        ("a\tt\tnope\tc4\t1\td5b3\tspecinfer\n", "row 1 .*column 'draft'"),
        ("a\tt\td\tc4\t1\td5b3\tspecinfer\na\tt\td\tc4\t1\td5b3\tspecinfer\n", "row 2 .*column 'row'"),
    ],
)
def test_bad_sheet_row_names_row_and_column(tmp_path, body, where):
    config = validate_config({"models": {"t": {"source": "hf:a/b"}, "d": {"source": "hf:a/c"}}})
    with pytest.raises(SheetError, match=where):
        load_sheet(_sheet(tmp_path, body), config)


def test_each_rule_gets_only_the_settings_it_uses():
    """threads reaches no job's settings; audit.bootstrap only aggregation's; sources need none."""
    from resispec.workflow.config import RULE_SETTINGS, rule_settings

    config = validate_config({})
    every = {rule: rule_settings(config, rule) for rule in RULE_SETTINGS}
    assert all("threads" not in settings for settings in every.values())
    assert [rule for rule, s in every.items() if "bootstrap" in s.get("audit", {})] == ["aggregate"]
    assert every["source_model"] == {} and "audit" not in every["train_model"]
    machine = ("device", "dtype", "compile", "seed", "testing")
    assert every["baseline"] == {key: config[key] for key in machine}
    assert every["decode"] == {**every["baseline"], "audit": every["decode"]["audit"]}
    assert set(every["decode"]["audit"]) == {"top_tokens", "max_nodes", "nodes_per_prompt"}
    with pytest.raises(ConfigError, match="unknown rule 'figures'"):
        rule_settings(config, "figures")
