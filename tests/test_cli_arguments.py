"""Every subcommand checks its arguments where they enter (`resispec.workflow.cli_types`): a bad value
stops the command with exit status 2 and a message naming the option and showing the value."""

import pytest

from resispec.cli import build_parser
from resispec.workflow.commands import main

NUMBER_01 = "must be a finite number in (0, 1)"
TEMPERATURE = "must be a finite number in [0, inf]"

# (argv, text the error must hold): each row one bad input
BAD_ARGUMENTS = [
    (["prompt-count", "--target", "0"], f"argument --target: {NUMBER_01}, got '0'"),
    (["prompt-count", "--target", "1.5"], f"argument --target: {NUMBER_01}, got '1.5'"),
    (["prompt-count", "--target", "nan"], f"argument --target: {NUMBER_01}, got 'nan'"),
    (["prompt-count", "--target", "tenth"], f"argument --target: {NUMBER_01}, got 'tenth'"),
    (["prompt-count", "--bootstrap", "0"], "argument --bootstrap: must be an integer >= 2, got '0'"),
    (["prompt-count", "--bootstrap", "-5"], "argument --bootstrap: must be an integer >= 2, got '-5'"),
    (["prompt-count", "--bootstrap", "1e3"], "argument --bootstrap: must be an integer >= 2, got '1e3'"),
    (["prompt-count", "--seed", "-1"], "argument --seed: must be an integer >= 0, got '-1'"),
    (["prompt-count", "--numerator", "magic"], "argument --numerator: must be one of specinfer, "),
    (["prompt-count", "--denominator", ""], "argument --denominator: must be one of specinfer, "),
    (["prompt-count", "--metric", "speed"], "argument --metric: invalid choice: 'speed'"),
    (
        ["prompt-count", "--records", "absent.jsonl"],
        "argument --records: must be an existing file, got 'absent.jsonl'",
    ),
    (["decode", "--job", "[1]"], "argument --job: must be a JSON object, got '[1]'"),
    (["decode", "--job", "{bad"], "argument --job: must be JSON (Expecting property name"),
    (["decode", "--job", '{"tree": "d40b4"}'], "argument --job: tree spec 'd40b4': 402,975,273,204,876,"),
    (["baseline", "--job", "[]"], "argument --job: must be a JSON object, got '[]'"),
    (["decode", "--job", '{"tree": "d12b6"}'], "argument --job: tree spec 'd12b6': 435,356,467 nodes"),
    (["decode", "--settings", "3"], "argument --settings: must be a JSON object, got '3'"),
    (["decode", "--threads", "0"], "argument --threads: must be an integer >= 1, got '0'"),
    (
        ["decode", "--prompts", "absent.jsonl"],
        "argument --prompts: must be an existing file, got 'absent.jsonl'",
    ),
    (["decode", "--target", "absent/READY.json"], "argument --target: must be an existing file"),
    (
        ["decode", "--profile", "absent.json"],
        "argument --profile: must be an existing file, got 'absent.json'",
    ),
    (["decode", "--full-vocab-nodes", "-1"], "argument --full-vocab-nodes: must be an integer >= 0"),
    (["decode", "--draft", "absent"], "argument --draft: must be an existing file, got 'absent'"),
    (["exactness", "--monte-carlo-nodes", "-2"], "argument --monte-carlo-nodes: must be an integer >= 0"),
    (["exactness", "--audit", "absent.pt"], "argument --audit: must be an existing file, got 'absent.pt'"),
    (["exactness", "--job", "null"], "argument --job: must be a JSON object, got 'null'"),
    (["aggregate", "--jobs", "{}"], "argument --jobs: must be a JSON array, got '{}'"),
    (["aggregate", "--exactness", "absent.csv"], "argument --exactness: must be an existing file"),
    (["aggregate", "--baselines", "absent.jsonl"], "argument --baselines: must be an existing file"),
    (["profile-pair", "--temperatures", "1", "-1"], f"argument --temperatures: {TEMPERATURE}, got '-1'"),
    (["profile-pair", "--temperatures", "inf"], f"argument --temperatures: {TEMPERATURE}, got 'inf'"),
    (["profile-pair", "--temperatures", "nan"], f"argument --temperatures: {TEMPERATURE}, got 'nan'"),
    (["profile-pair", "--profile-settings", "[]"], "argument --profile-settings: must be a JSON object"),
    (["prepare-data", "--dataset", "wikitext"], "argument --dataset: dataset 'wikitext' is unknown"),
    (["prepare-data", "--model", "absent.json"], "argument --model: must be an existing file"),
    (["prepare-data", "--corpus", "absent.jsonl"], "argument --corpus: must be an existing file"),
    (["prepare-model", "--spec", "null"], "argument --spec: must be a JSON object, got 'null'"),
    (["prepare-model", "--teacher", "absent.json"], "argument --teacher: must be an existing file"),
    (["report", "--config", "[]"], "argument --config: must be a JSON object, got '[]'"),
    (["report", "--tables", "absent.csv"], "argument --tables: must be an existing file, got 'absent.csv'"),
    (["report", "--models", "absent.json"], "argument --models: must be an existing file"),
    (["notebook", "--source", "absent.ipynb"], "argument --source: must be an existing file"),
    (["notebook", "--nodes", "absent.csv"], "argument --nodes: must be an existing file"),
    (["info", "--gpu", "h900"], "argument --gpu: invalid choice: 'h900'"),
    (
        ["info", "--configfile", "absent.yaml"],
        "argument --configfile: must be an existing file, got 'absent.yaml'",
    ),
    (["info", "--threads", "-3"], "argument --threads: must be an integer >= 1, got '-3'"),
    (["rehearsal-cache", "out", "--seed", "-1"], "argument --seed: must be an integer >= 0, got '-1'"),
    (
        ["rehearsal-cache", "out", "--configfile", "absent.yaml"],
        "argument --configfile: must be an existing file",
    ),
]


@pytest.mark.parametrize(("argv", "message"), BAD_ARGUMENTS)
def test_bad_argument_is_named(tmp_path, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(tmp_path)  # relative names like "absent.jsonl" do not exist here
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_missing_config_file_is_named(tmp_path, capsys):
    assert main(["validate-config", str(tmp_path / "absent.yaml")]) == 2
    assert f"config file not found: {tmp_path / 'absent.yaml'}" in capsys.readouterr().err


def test_good_arguments_are_normalised(tmp_path):
    records = tmp_path / "run.jsonl"
    records.write_text("")
    args = build_parser().parse_args(
        ["prompt-count", "--records", str(records), "--target", "0.05", "--bootstrap", "200", "--seed", "0"]
    )
    assert (args.target, args.bootstrap, args.seed, args.records) == (0.05, 200, 0, [records])
    args = build_parser().parse_args(
        ["prepare-data", "--model", str(records), "--prompts", "p", "--dataset", "cnn_dm"]
    )
    assert args.dataset == "cnn_dailymail"
