"""The files of one decoding pass of a run: records appended as each (method, prompt) finishes, so that a
killed job resumes where it stopped; the declared outputs are published only when every prompt is done.

`<records>.partial` holds raw per-prompt records; with an ``audit_out`` (the audit pass),
`<audit>.partial.jsonl` holds the audited nodes of each (method, prompt), and a prompt counts as done
only once both of its lines exist.
"""

from __future__ import annotations

import base64
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
    audit_out: str | None = None

    @property
    def partial(self) -> Path:
        return Path(self.records_out + ".partial")

    @property
    def audit_partial(self) -> Path | None:
        return Path(self.audit_out + ".partial.jsonl") if self.audit_out else None

    def done(self) -> set[tuple[str, str]]:
        """(method, prompt id) pairs already finished; audit lines without a record are dropped."""
        done = {(row["method"], row["prompt_id"]) for row in read_complete_lines(self.partial)}
        if self.audit_partial is None:
            return done
        lines = read_complete_lines(self.audit_partial)
        audited = [row for row in lines if (row["method"], row["prompt_id"]) in done]
        if len(audited) != len(lines):
            self.audit_partial.write_text("".join(_line(r) for r in audited))
        return done

    def append(self, record: dict, nodes: list[dict] | None = None) -> None:
        """Append one finished (method, prompt): its audited nodes first (audit pass), its record last."""
        if self.audit_partial is not None:
            entry = {"method": record["method"], "prompt_id": record["prompt_id"], "nodes": nodes or []}
            append_line(self.audit_partial, _jsonable(entry))
        append_line(self.partial, record)

    def publish(self, job: dict, prompts: list[dict]) -> None:
        """Write the records in (method, prompt) order and the audit file; remove the partial files."""
        order = {p["prompt_id"]: i for i, p in enumerate(prompts)}
        methods = {m: i for i, m in enumerate(job["methods"])}
        key = lambda row: (methods[row["method"]], order[row["prompt_id"]])  # noqa: E731
        rows = sorted(read_complete_lines(self.partial), key=key)
        if self.audit_partial is not None:
            audits = sorted(read_complete_lines(self.audit_partial), key=key)
            nodes = [
                dict(_restore(node), method=a["method"], prompt_id=a["prompt_id"])
                for a in audits
                for node in a["nodes"]
            ]
            torch.save({"job": job, "nodes": nodes}, self.audit_out)
            log.info("wrote %d audited nodes", len(nodes))
        tmp = Path(self.records_out + ".tmp")
        tmp.write_text("".join(_line(r) for r in rows))
        finalise(tmp, self.records_out)
        self.partial.unlink(missing_ok=True)
        if self.audit_partial is not None:
            self.audit_partial.unlink(missing_ok=True)
        log.info("wrote %d records", len(rows))


def _line(row: dict) -> str:
    return json.dumps(row, sort_keys=True) + "\n"


ROW_KEYS = ("target", "draft")  # the bytes fields of an encoded full-row entry ("full")


def _jsonable(entry: dict) -> dict:
    """Encoded full rows (bytes) as base64 text, so that the partial file stays JSON Lines."""
    for node in entry["nodes"]:
        if "full" in node:
            node["full"] = {
                **node["full"],
                **{k: base64.b64encode(node["full"][k]).decode() for k in ROW_KEYS},
            }
    return entry


def _restore(node: dict) -> dict:
    if "full" not in node:
        return node
    return dict(node, full={**node["full"], **{k: base64.b64decode(node["full"][k]) for k in ROW_KEYS}})
