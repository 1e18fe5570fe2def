"""The files of one decoding pass of a run: records appended as each (method, prompt) finishes, so that a
killed job resumes where it stopped; the declared outputs are published only when every prompt is done.

`<records>.partial` holds raw per-prompt records; with an ``audit_out`` (nodes kept for the audit),
`<audit>.partial.jsonl` holds the audited nodes of each (method, prompt), and a prompt counts as done
only once both of its lines exist. `<records>.partial.fingerprint.json` holds the fingerprint of what
the records depend on (`resispec.workflow.fingerprint`): a job whose fingerprint differs (another seed,
method list, model, prompts file, ...) discards the partial files, with a log line saying what changed,
and starts from the first prompt, so that a published file never mixes two configurations.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from resispec.workflow.fingerprint import difference
from resispec.workflow.resume import append_line, finalise, read_complete_lines

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunFiles:
    records_out: str
    audit_out: str | None = None
    fingerprint: dict | None = None  # what the records depend on; None: resume whatever is there

    @property
    def stamp(self) -> Path:
        return Path(self.records_out + ".partial.fingerprint.json")

    @property
    def partial(self) -> Path:
        return Path(self.records_out + ".partial")

    @property
    def audit_partial(self) -> Path | None:
        return Path(self.audit_out + ".partial.jsonl") if self.audit_out else None

    def _partials(self) -> list[Path]:
        return [p for p in (self.partial, self.audit_partial) if p is not None and p.exists()]

    def _check_fingerprint(self) -> None:
        """Discard partial files made with another fingerprint (or none); record this job's fingerprint."""
        if self.fingerprint is None:
            return
        old = json.loads(self.stamp.read_text()) if self.stamp.is_file() else None
        if self._partials() and old != self.fingerprint:
            why = "it has no fingerprint" if old is None else difference(old, self.fingerprint)
            log.warning(
                "discarding the resume file %s, made with other inputs (%s); decoding from the first prompt",
                self.partial,
                why,
            )
            for path in self._partials():
                path.unlink()
        if old != self.fingerprint or not self.stamp.is_file():
            tmp = Path(str(self.stamp) + ".tmp")
            tmp.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(self.fingerprint, sort_keys=True) + "\n")
            finalise(tmp, self.stamp)

    def done(self) -> set[tuple[str, str]]:
        """(method, prompt id) pairs already finished with this fingerprint; audit lines without a record
        are dropped."""
        self._check_fingerprint()
        done = {(row["method"], row["prompt_id"]) for row in read_complete_lines(self.partial)}
        if self.audit_partial is None:
            return done
        lines = read_complete_lines(self.audit_partial)
        audited = [row for row in lines if (row["method"], row["prompt_id"]) in done]
        if len(audited) != len(lines):
            self.audit_partial.write_text("".join(_line(r) for r in audited))
        return done

    def append(self, record: dict, nodes: list[dict] | None = None) -> None:
        """Append one finished (method, prompt): its audited nodes first (with an ``audit_out``), its record
        last."""
        if self.audit_partial is not None:
            entry = {"method": record["method"], "prompt_id": record["prompt_id"], "nodes": nodes or []}
            append_line(self.audit_partial, _jsonable(entry))
        append_line(self.partial, record)

    def publish(self, job: dict, prompts: list[dict]) -> None:
        """Write the records in (method, prompt) order and the audit file; remove the partial files."""
        order = {p["prompt_id"]: i for i, p in enumerate(prompts)}
        methods = {m: i for i, m in enumerate(job["methods"])}
        key = lambda row: (methods[row["method"]], order[row["prompt_id"]])  # noqa: E731
        rows = read_complete_lines(self.partial)
        self._check_rows(rows, methods, order)
        rows = sorted(rows, key=key)
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
        self.stamp.unlink(missing_ok=True)
        log.info("wrote %d records", len(rows))

    def _check_rows(self, rows: list[dict], methods: dict, order: dict) -> None:
        """Every record of a method and prompt of this job, each once (else: name the partial file)."""
        counts = Counter((row["method"], row["prompt_id"]) for row in rows)
        stray = [k for k in counts if k[0] not in methods or k[1] not in order]
        twice = sorted(k for k, n in counts.items() if n > 1)
        if stray or twice:
            what = "are not of this job" if stray else "appear twice"
            raise ValueError(
                f"{self.partial}: records of (method, prompt) {(stray or twice)[0]} {what}; "
                "delete the file to decode from the start"
            )


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
