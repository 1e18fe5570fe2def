"""Every file name the workflow writes, in one place (rules and tests share it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkflowPaths:
    results: str = "results"
    reports: str = "reports"

    def prompts(self, target: str = "{target}", dataset: str = "{dataset}") -> str:
        return f"{self.results}/prompts/{target}/{dataset}.jsonl"

    def model(self, model: str = "{model}") -> str:
        return f"{self.results}/models/{model}/READY.json"

    def teacher(self, name: str = "{teacher}", part: str = "{part}") -> str:
        """One part of a shared teacher pass (`resispec.workflow.teachers`): temporary, read by its models."""
        return f"{self.results}/teachers/{name}/part{part}.pt"

    def profile(self, target: str = "{target}", draft: str = "{draft}") -> str:
        return f"{self.results}/profiles/{target}/{draft}.json"

    def raw(self, run: str = "{run}") -> str:
        return f"{self.results}/raw/{run}.jsonl"

    def baseline(self, baseline: str = "{baseline}") -> str:
        """Raw records of an autoregressive baseline's timing pass (`sheets.group_baselines`)."""
        return f"{self.results}/baseline/{baseline}.jsonl"

    def audit(self, run: str = "{run}") -> str:
        """The nodes a run's timing pass kept for the exactness audit."""
        return f"{self.results}/audit/{run}.pt"

    def exactness(self, run: str = "{run}") -> str:
        return f"{self.results}/exactness/{run}.csv"

    def exactness_variants(self, run: str = "{run}") -> str:
        """Every (budget, order) variant of resispec on a run's audited nodes (audit/variants.py)."""
        return f"{self.results}/exactness_variants/{run}.csv"

    def table(self, table: str = "{table}") -> str:
        return f"{self.results}/tables/{table}.csv"

    def log(self, rule: str, name: str) -> str:
        return f"{self.results}/logs/{rule}/{name}.log"

    def environment(self, run_name: str = "{run_name}") -> str:
        """The hardware and versions of one run (config `run_name`), recorded where it ran."""
        return f"{self.results}/environment/{run_name}.json"

    def benchmark(self, rule: str, name: str) -> str:
        return f"{self.results}/benchmarks/{rule}/{name}.tsv"

    @property
    def report_html(self) -> str:
        return f"{self.reports}/report.html"
