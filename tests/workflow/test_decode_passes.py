"""The timing pass of a run (`resispec decode`) on tiny models: a short warm-up per method, methods
interleaved per prompt, one seed per prompt for every method, the autoregressive baseline included; with
``--audit``, the prompts the audit samples keep sampled nodes (some with full rows) from the timed
generations themselves, which give the same tokens as without the audit; every record names its pass,
whether it was audited, its device, host and threads."""

import json
import math
import re
import socket

import pytest
import torch
from workflow_helpers import decode_args, tiny_decoding_dir

from resispec.decoding.order import WARMUP_NEW_TOKENS, interleaved
from resispec.decoding.session import DecodeSession
from resispec.workflow.commands import main
from resispec.workflow.steps.decode import fail_once

METHODS = ["specinfer", "resispec", "autoregressive"]
JOB = {
    "run": "passes",
    "target": "t",
    "draft": "d",
    "dataset": "c4",
    "temperature": 1.0,
    "tree": "d3b2",
    "num_prompts": 5,
    "methods": METHODS,
}
AUDIT = {"top_tokens": 8, "max_nodes": 6, "nodes_per_prompt": 3, "full_vocab_nodes": 3}
SETTINGS = {"seed": 3, "device": "cpu", "dtype": "float32", "audit": AUDIT}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("passes")
    prompts = tiny_decoding_dir(root, prompts=5, prompt_tokens=12, max_new_tokens=10)
    common = decode_args(root, JOB, SETTINGS)
    calls, budgets = [], []
    original = DecodeSession.timing_prompt
    DecodeSession.timing_prompt = lambda self, m, p, s, plan: (
        calls.append((m, p["prompt_id"], s, plan))
        or budgets.append(p["max_new_tokens"])
        or original(self, m, p, s, plan)
    )
    try:
        assert (
            main(["decode", *common, "--records", str(root / "raw.jsonl"), "--audit", str(root / "a.pt")])
            == 0
        )
    finally:
        DecodeSession.timing_prompt = original
    assert main(["decode", *common, "--records", str(root / "unaudited.jsonl")]) == 0
    read = lambda name: [json.loads(line) for line in (root / name).read_text().splitlines()]  # noqa: E731
    return {
        "timing": read("raw.jsonl"),
        "unaudited": read("unaudited.jsonl"),
        "calls": calls,
        "budgets": budgets,
        "nodes": torch.load(root / "a.pt", weights_only=True)["nodes"],
        "prompts": prompts,
        "common": common,
        "root": root,
    }


def test_timing_pass_warms_up_interleaves_and_shares_seeds(run):
    """Each method's warm-up first (the first WARMUP_NEW_TOKENS tokens of the first prompt), then prompt by
    prompt with a rotating method order and the full budget; every method of a prompt uses the prompt's
    seed."""
    calls, ids = run["calls"], [p["prompt_id"] for p in run["prompts"]]
    assert [call[:3] for call in calls[:3]] == [(m, ids[0], calls[0][2]) for m in METHODS]  # the warm-up
    budget = run["prompts"][0]["max_new_tokens"]
    assert WARMUP_NEW_TOKENS < budget
    assert run["budgets"] == [WARMUP_NEW_TOKENS] * 3 + [budget] * (len(calls) - 3)
    timed = calls[3:]
    assert [(m, p) for m, p, _, _ in timed] == [
        (m, p["prompt_id"]) for m, p in interleaved(METHODS, run["prompts"], set())
    ]
    assert [call[0] for call in timed[3:6]] == METHODS[1:] + METHODS[:1]  # the second prompt starts one later
    seeds = {}
    for method, prompt, seed, _ in calls:
        assert seeds.setdefault(prompt, seed) == seed, f"{method} used another seed for {prompt}"
    records = run["timing"]
    assert len(records) == len(METHODS) * len(ids) and {r["method"] for r in records} == set(METHODS)


def test_records_name_their_pass_and_machine(run):
    for record in run["timing"] + run["unaudited"]:
        assert record["pass"] == "timing" and record["device"] == "cpu" and record["threads"] == 1
        assert record["hostname"] == socket.gethostname() and record["dtype"] == "float32"
    baseline = [r for r in run["timing"] if r["method"] == "autoregressive"]
    assert all(r["accepted_lengths"] == [1] * len(r["new_tokens"]) for r in baseline)


def test_the_audit_rides_on_the_sampled_prompts_and_changes_no_token(run):
    """ceil(max_nodes / nodes_per_prompt) prompts keep nodes, of every tree method and no autoregressive;
    exactly their records say ``audited``; the pass without ``--audit`` audits nothing and gives the same
    tokens from the same seeds (the rows' copies draw nothing from the generator)."""
    timing, nodes = run["timing"], run["nodes"]
    kept = {(n["method"], n["prompt_id"]) for n in nodes}
    prompts = {prompt for _, prompt in kept}
    assert len(prompts) == math.ceil(AUDIT["max_nodes"] / AUDIT["nodes_per_prompt"]) < JOB["num_prompts"]
    assert kept == {(m, p) for m in ("specinfer", "resispec") for p in prompts}
    assert {(r["method"], r["prompt_id"]) for r in timing if r["audited"]} == kept
    assert not any(r["audited"] for r in run["unaudited"])
    plain = {(r["method"], r["prompt_id"]): r for r in run["unaudited"]}
    assert len(plain) == len(timing)
    for record in timing:
        twin = plain[(record["method"], record["prompt_id"])]
        assert record["new_tokens"] == twin["new_tokens"] and record["seed"] == twin["seed"]


def test_audit_nodes_are_sampled_with_full_rows_for_some(run):
    nodes = run["nodes"]
    for method in ("specinfer", "resispec"):
        mine = [n for n in nodes if n["method"] == method]
        per_prompt = {}
        for node in mine:
            per_prompt.setdefault(node["prompt_id"], []).append(node)
        assert all(len(v) <= AUDIT["nodes_per_prompt"] for v in per_prompt.values())
        assert all(n["candidates"] and 0 <= n["position"] < n["verified_nodes"] for n in mine)
        assert sum("full" in n for n in mine) == AUDIT["full_vocab_nodes"]
        assert all(isinstance(n["full"]["target"], bytes) for n in mine if "full" in n)


def test_fail_once_fails_each_matching_run_on_its_first_attempt_only(tmp_path):
    """testing.fail_once_runs picks the runs the retry test makes fail; the others never fail."""
    settings = {"testing": {"fail_once_dir": str(tmp_path), "fail_once_runs": "sequoia"}}
    fail_once(settings, {"run": "c4_T1_d3b3"})
    with pytest.raises(RuntimeError, match="deliberate first-attempt failure"):
        fail_once(settings, {"run": "c4_T1_sequoia16x4"})
    fail_once(settings, {"run": "c4_T1_sequoia16x4"})  # the retry
    assert [p.name for p in tmp_path.iterdir()] == ["c4_T1_sequoia16x4.failed-once"]
    with pytest.raises(RuntimeError):
        fail_once({"testing": {"fail_once_dir": str(tmp_path)}}, {"run": "c4_T1_d3b3"})  # null: every run


@pytest.mark.parametrize("audit", [False, True])
def test_an_oversized_tree_on_the_command_line_stops_before_any_model_loads(run, monkeypatch, capsys, audit):
    """A job whose tree names 4^40 nodes is refused with its node count (exit status 2); no model loads,
    and the records already written (a .partial of an earlier attempt) stay as they were."""
    import resispec.models.loading

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(resispec.models.loading, "load_model", no_load)
    common = list(run["common"])
    common[common.index("--job") + 1] = json.dumps({**JOB, "tree": "d40b4"})
    records = run["root"] / f"oversized-{audit}.jsonl"
    partial = records.with_name(records.name + ".partial")
    partial.write_text('{"kept": true}\n')
    extra = ["--audit", str(run["root"] / "oversized.pt")] if audit else []
    with pytest.raises(SystemExit) as stopped:
        main(["decode", *common, "--records", str(records), *extra])
    assert stopped.value.code == 2
    assert re.search(
        r"argument --job: tree spec 'd40b4': [\d,]+ nodes, more than the 1024", capsys.readouterr().err
    )
    assert partial.read_text() == '{"kept": true}\n' and not records.exists()


def _draft_dir(run, name: str, edit) -> list[str]:
    """The run's command line with a copy of its draft directory changed by ``edit(directory)``."""
    import shutil

    directory = run["root"] / name
    if not directory.exists():
        shutil.copytree(run["root"] / "d", directory)
        edit(directory)
    common = list(run["common"])
    common[common.index("--draft") + 1] = str(directory / "READY.json")
    return common


def _swap_two_tokens(directory) -> None:
    tokenizer = json.loads((directory / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    (a, i), (b, j) = sorted(vocab.items(), key=lambda item: item[1])[65:67]
    vocab[a], vocab[b] = j, i
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer))


def _other_vocabulary(directory) -> None:
    from transformers import LlamaConfig, LlamaForCausalLM

    for path in directory.glob("*.safetensors"):
        path.unlink()
    config = LlamaConfig(vocab_size=80, hidden_size=32, intermediate_size=64, num_hidden_layers=1)
    LlamaForCausalLM(config).save_pretrained(directory)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (directory / name).unlink(missing_ok=True)  # a plain Hugging Face draft without a tokenizer


def test_a_draft_with_another_tokenizer_stops_before_any_model_loads(run, monkeypatch):
    """The draft directory's tokenizer maps two ids to other tokens: refused naming both directories and
    the first id that differs, before a model loads."""
    import resispec.models.loading

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(resispec.models.loading, "load_model", no_load)
    common = _draft_dir(run, "d-swapped", _swap_two_tokens)
    records = run["root"] / "swapped.jsonl"
    with pytest.raises(ValueError, match=r"do not share one tokenizer: .* token id 65 is "):
        main(["decode", *common, "--records", str(records)])
    assert not records.exists() and not records.with_name(records.name + ".partial").exists()


def test_a_draft_of_another_vocabulary_stops_before_any_decoding(run, monkeypatch):
    """A plain Hugging Face draft of 80 tokens beside the 258-token target: refused naming both sizes."""
    calls = []
    monkeypatch.setattr(DecodeSession, "timing_prompt", lambda *args: calls.append(args))
    common = _draft_dir(run, "d-80", _other_vocabulary)
    records = run["root"] / "other-vocab.jsonl"
    with pytest.raises(ValueError, match=r"draft vocabulary: the draft scores 80 tokens, the target 258"):
        main(["decode", *common, "--records", str(records)])
    assert calls == [] and not records.exists()


def test_bench_warm_up_prints_each_methods_first_steps_over_its_steady_step(run, capsys):
    """`python -m resispec.bench warm_up` on the tiny pair: a row per method, its steady step in ms and
    the first prompt's steps over it (what the timing pass's warm-up has to absorb)."""
    from resispec.bench import warm_up

    root = run["root"]
    argv = ["--target", str(root / "t"), "--draft", str(root / "d"), "--prompts", str(root / "prompts.jsonl")]
    argv += ["--num-prompts", "3", "--tree", "d3b2", "--threads", "1"]
    argv += ["--methods", "specinfer,autoregressive"]
    assert warm_up.main(argv) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[2:]}
    assert set(rows) == {"specinfer", "autoregressive"}
    for values in rows.values():
        assert float(values[0]) > 0 and len(values) >= 2 and all(float(v) > 0 for v in values[1:])


def test_bench_audit_logging_prints_each_methods_ratio_and_the_same_tokens(run, capsys):
    """`python -m resispec.bench audit_logging` on the tiny pair: per method, both settings' ms per token,
    the on / off ratio inside its interval, and the same tokens in every pair (the logging draws nothing
    from the generator)."""
    from resispec.bench import audit_logging

    root = run["root"]
    argv = ["--target", str(root / "t"), "--draft", str(root / "d"), "--prompts", str(root / "prompts.jsonl")]
    argv += ["--num-prompts", "2", "--tree", "d3b2", "--threads", "1", "--top", "4"]
    argv += ["--methods", "specinfer,ers", "--rounds", "2"]
    assert audit_logging.main(argv) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[2:]}
    assert set(rows) == {"specinfer", "ers"}
    for off, on, ratio, low, high, after, same in rows.values():
        assert float(off) > 0 and float(on) > 0 and abs(float(after)) < 60
        assert float(low.strip("[,")) <= float(ratio) <= float(high.strip("]"))
        assert same == "4/4"  # 2 prompts x 2 rounds
