"""The files of one decoding run: records appended as each (method, prompt) finishes, so that a killed
job resumes where it stopped; the declared outputs are published only when every prompt is done.

`<records>.partial` holds raw per-prompt records, `<audit>.partial.jsonl` the audited nodes of each
(method, prompt); a prompt counts as done only once both of its lines exist.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from resispec.workflow.resume import append_line, finalise, read_complete_lines

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunFiles:
    records_out: str
    audit_out: str

    @property
    def partial(self) -> Path:
        return Path(self.records_out + ".partial")

    @property
    def audit_partial(self) -> Path:
        return Path(self.audit_out + ".partial.jsonl")

    def done(self) -> set[tuple[str, str]]:
        """(method, prompt id) pairs already finished; audit lines without a record are dropped."""
        done = {(row["method"], row["prompt_id"]) for row in read_complete_lines(self.partial)}
        lines = read_complete_lines(self.audit_partial)
        audited = [row for row in lines if (row["method"], row["prompt_id"]) in done]
        if len(audited) != len(lines):
            self.audit_partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in audited))
        return done

    def append(self, record: dict, nodes: list[dict]) -> None:
        """Append one finished (method, prompt): its audited nodes first, its record last."""
        entry = {"method": record["method"], "prompt_id": record["prompt_id"], "nodes": nodes}
        append_line(self.audit_partial, entry)
        append_line(self.partial, record)

    def publish(self, job: dict, prompts: list[dict]) -> None:
        """Write the records in (method, prompt) order and the audit file; remove the partial files."""
        order = {p["prompt_id"]: i for i, p in enumerate(prompts)}
        methods = {m: i for i, m in enumerate(job["methods"])}
        key = lambda row: (methods[row["method"]], order[row["prompt_id"]])  # noqa: E731
        rows = sorted(read_complete_lines(self.partial), key=key)
        audits = sorted(read_complete_lines(self.audit_partial), key=key)
        nodes = [
            dict(node, method=a["method"], prompt_id=a["prompt_id"]) for a in audits for node in a["nodes"]
        ]
        torch.save({"job": job, "nodes": nodes}, self.audit_out)
        tmp = Path(self.records_out + ".tmp")
        tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
        finalise(tmp, self.records_out)
        self.partial.unlink()
        self.audit_partial.unlink()
        log.info("wrote %d records and %d audited nodes", len(rows), len(nodes))
