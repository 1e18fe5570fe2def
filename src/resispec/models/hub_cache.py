"""A Hugging Face hub cache written by hand, in the layout `huggingface_hub` reads when offline.

Layout (`huggingface_hub` 2.x, `_snapshot_download.py` / `file_download.py` / `_tree_cache.py`)::

    CACHE/models--ORG--NAME/
        blobs/ETAG                      file contents; ETAG = git blob sha1, or sha256 for LFS files
        snapshots/COMMIT/PATH           relative symlinks to ../../blobs/ETAG
        refs/main                       COMMIT (no newline)
        trees/COMMIT.json               the commit's file listing (lets the hub library tell complete
                                        snapshots from partial ones)

`CACHE` is `$HF_HUB_CACHE`, by default `$HF_HOME/hub`. With `HF_HUB_OFFLINE=1`,
`snapshot_download(repo_id)` resolves `refs/main` to COMMIT and returns `snapshots/COMMIT`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

# Files the hub stores through LFS (their ETag is the content's sha256): weights and SentencePiece models.
LFS_SUFFIXES = (".bin", ".safetensors", ".model", ".pt", ".pth")
TREE_FORMAT_VERSION = 1  # huggingface_hub's TREE_CACHE_FORMAT_VERSION


def repo_folder(cache_dir: str | Path, repo_id: str) -> Path:
    """`models--ORG--NAME` under the cache directory."""
    return Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))


def git_blob_id(data: bytes) -> str:
    """Git's object id of a blob (what the hub reports as a file's blob id)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _entry(data: bytes, lfs: bool) -> tuple[str, dict]:
    blob_id = git_blob_id(data)
    entry = {"size": len(data), "blob_id": blob_id}
    if not lfs:
        return blob_id, entry
    sha256 = hashlib.sha256(data).hexdigest()
    return sha256, {**entry, "lfs_sha256": sha256, "lfs_size": len(data)}


def _commit_id(entries: dict[str, dict]) -> str:
    """A stable 40-hex commit id for a file set (a stand-in for the hub's commit sha)."""
    listing = "".join(f"{path}\0{entries[path]['blob_id']}\n" for path in sorted(entries))
    return hashlib.sha1(listing.encode()).hexdigest()


def write_snapshot(
    cache_dir: str | Path, repo_id: str, source_dir: str | Path, *, revision: str | None = None
) -> Path:
    """Store every file under `source_dir` as the `main` snapshot of `repo_id`; returns the snapshot folder.

    `revision`: the commit id to file it under (default: derived from the files' blob ids).
    """
    storage, source = repo_folder(cache_dir, repo_id), Path(source_dir)
    entries, etags = {}, {}
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        name = path.relative_to(source).as_posix()
        data = path.read_bytes()
        etags[name], entries[name] = _entry(data, name.endswith(LFS_SUFFIXES))
        blob = storage / "blobs" / etags[name]
        if not blob.is_file():
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_bytes(data)
    commit = revision or _commit_id(entries)
    snapshot = storage / "snapshots" / commit
    for name, etag in etags.items():
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(storage / "blobs" / etag, link.parent))
    (storage / "refs").mkdir(parents=True, exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    tree = {"format_version": TREE_FORMAT_VERSION, "files": {name: entries[name] for name in sorted(entries)}}
    (storage / "trees").mkdir(parents=True, exist_ok=True)
    (storage / "trees" / f"{commit}.json").write_text(json.dumps(tree, indent=1) + "\n")
    return snapshot
