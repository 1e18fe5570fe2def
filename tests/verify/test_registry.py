"""The registry is the one list of methods: every list the package exposes, the per-node and batched
samplers, the law functions and the sheet schema read it, so a registered method appears everywhere."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from resispec.report.beside import beside_notes
from resispec.report.tidy import method_label
from resispec.verify import Method, get_method, register
from resispec.verify.registry import names, unregister

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my_verifiers.py"

# Registers the example plugin in a fresh interpreter, then reads every list of methods the package
# exposes and validates a sheet naming the new method.
LISTS = """
import json, sys, tempfile
from pathlib import Path
from resispec.workflow.plugins import load_plugin
added = load_plugin(sys.argv[1])
import resispec, resispec.verify as verify
from resispec.verify import batched
from resispec.audit import exactness
from resispec.report import bounds, paper_limits
from resispec.bench import verify as bench_verify
from resispec.workflow.sheets import _sheet_schema
import jsonschema
schema = _sheet_schema()["properties"]["methods"]
jsonschema.validate("specinfer," + added[0], schema)
out = {
    "added": list(added),
    "METHODS": list(resispec.METHODS),
    "verify.METHODS": list(verify.METHODS),
    "EXACT_METHODS": list(verify.EXACT_METHODS),
    "VERIFIERS": sorted(verify.VERIFIERS),
    "BATCHED_METHODS": list(batched.BATCHED_METHODS),
    "EXACTNESS_METHODS": list(exactness.EXACTNESS_METHODS),
    "LAW_METHODS": list(bench_verify.LAW_METHODS),
    "OWN_METHODS": list(paper_limits.OWN_METHODS),
    "METHOD_ORDER": list(bounds.METHOD_ORDER),
    "ERS_OPTIONS": list(batched.ERS_OPTIONS),
    "ers options": list(verify.get_method("ers").options),
    "schema": schema["pattern"],
}
print(json.dumps(out))
"""


def test_registering_a_method_makes_it_appear_in_every_list():
    """A method registered by a plugin is in METHODS, EXACT_METHODS, VERIFIERS, BATCHED_METHODS,
    EXACTNESS_METHODS, LAW_METHODS, OWN_METHODS, METHOD_ORDER and the sheet schema's pattern."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    done = subprocess.run(
        [sys.executable, "-c", LISTS, str(EXAMPLE)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    lists = json.loads(done.stdout)
    assert lists.pop("added") == ["first_candidate"]
    assert lists.pop("ERS_OPTIONS") == lists.pop("ers options") == ["iterations", "damping", "tol", "bins"]
    pattern = lists.pop("schema")
    assert "first_candidate" in pattern
    for key, values in lists.items():
        assert "first_candidate" in values, f"{key} does not derive from the registry: {values}"


def test_built_in_lists_are_the_registry_filtered():
    """The built-ins' lists as they were, now filtered from the registry by the methods' properties."""
    import resispec.verify as verify
    from resispec.audit import exactness
    from resispec.report import paper_limits

    assert set(verify.METHODS) >= {
        "specinfer",
        "sequoia",
        "ers",
        "resispec",
        "optimal",
        "greedy",
        "deterministic",
    }
    assert set(names(exact=True)) >= {"specinfer", "sequoia", "ers", "optimal", "deterministic"}
    assert "resispec" not in verify.EXACT_METHODS and "greedy" not in verify.EXACT_METHODS
    assert "greedy" not in exactness.EXACTNESS_METHODS and "resispec" in exactness.EXACTNESS_METHODS
    assert set(paper_limits.OWN_METHODS) >= {"optimal", "specinfer", "ers", "resispec"}
    assert "sequoia" not in paper_limits.OWN_METHODS
    assert get_method("optimal").host_planner and not get_method("specinfer").host_planner
    assert [m for m in names() if get_method(m).shaping] == ["ers", "resispec"]
    # the report's, the profile's and the sheets' method lists, as the constants they replace said
    assert names(sequential=False) == ("optimal",)
    assert set(names(host_verifier=False)) == {"resispec", "ers", "optimal"}
    assert set(names(depends_on_k=True)) == {"ers", "optimal"}
    assert set(names(every_run=True)) == {"ers", "optimal"}
    assert list(beside_notes()) == ["optimal"]


def test_a_plugin_in_a_host_is_labelled_host_plus_method():
    """A registered method that is no host's own verifier is labelled "host+method" in a host's rows
    (like resispec, ers and optimal), and shown beside the paper only if it carries a note."""

    class Probe(Method):
        name = "probe_label"

    register(Probe())
    try:
        assert method_label("sequoia", "probe_label") == "sequoia+probe_label"
        assert method_label("specinfer", "probe_label") == "probe_label"
        assert method_label("sequoia", "sequoia") == "sequoia"
        assert "probe_label" not in beside_notes() and get_method("probe_label").depends_on_k
    finally:
        unregister("probe_label")


def test_register_rejects_bad_methods():
    """A bad name, a name taken, bad draws or a non-Method are errors naming what is wrong."""

    class Bad(Method):
        name = "specinfer"

    with pytest.raises(ValueError, match="'specinfer' is already registered"):
        register(Bad())
    Bad.name = "two,names"
    with pytest.raises(ValueError, match="must match"):
        register(Bad())
    Bad.name, Bad.draws = "fine", "sometimes"
    with pytest.raises(ValueError, match="draws must be one of"):
        register(Bad())
    with pytest.raises(TypeError, match="Method instance"):
        register("specinfer")
    with pytest.raises(ValueError, match="unknown verification method 'nope'"):
        get_method("nope")


def test_unknown_options_are_named():
    """Options are checked against the method's declared options, defaults filled in."""
    assert get_method("resispec").check_options({"budget": "global"}) == {
        "budget": "global",
        "order": "decreasing_q",
    }
    with pytest.raises(ValueError, match=r"unknown ers options \['budget'\]"):
        get_method("ers").check_options({"budget": "local"})


def test_no_candidate_sentinel_is_the_batched_samplers():
    """A leaf row (no candidates) reports NO_CANDIDATE, the one sentinel."""
    from resispec.verify import NO_CANDIDATE
    from resispec.verify.batched import verify_rows

    target = torch.tensor([[0.5, 0.5]], dtype=torch.float64)
    none = torch.zeros(1, 0, dtype=torch.long)
    out = verify_rows("specinfer", target, target, none, none.bool(), torch.Generator().manual_seed(0))
    assert int(out.accepted_index[0]) == NO_CANDIDATE == -1


FAMILIES = {  # each built-in method's family: the module (or subpackage) that holds all its code
    "specinfer": "resispec.verify.sequential",
    "ers": "resispec.verify.sequential",
    "optimal": "resispec.verify.optimal",
    "resispec": "resispec.verify.resispec",
    "sequoia": "resispec.verify.without_replacement",
    "deterministic": "resispec.verify.greedy",
    "greedy": "resispec.verify.greedy",
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_built_in_is_defined_in_one_family_module(name):
    """A built-in's Method class, per-node sampler, batched chain and law functions all live in its
    family's module (a subpackage for optimal), not spread over sampler / batched / law modules."""
    method = get_method(name)
    pieces = [type(method), method.sampler]
    pieces += [getattr(method, a, None) for a in ("chain", "law_of", "history_law", "history_estimate")]
    modules = {piece.__module__ for piece in pieces if piece is not None}
    family = FAMILIES[name]
    assert all(m == family or m.startswith(family + ".") for m in modules), (name, modules)
    assert names()[: len(FAMILIES)] == tuple(FAMILIES)  # the report's order is kept
