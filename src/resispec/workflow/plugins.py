"""The config's ``plugins``: modules of one's own verification methods, imported before the sheets are
validated (``sheets.expand_jobs``) and in every job (``bridge``), so that a sheet may name the methods
they register.

An entry is a module name on the Python path (``my_verifiers``) or a path to a ``.py`` file, relative to
the working directory (``examples/my_verifiers.py``; imported under its file name, ``my_verifiers``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from resispec.workflow.config import ConfigError

_LOADED: dict[str, tuple[str, ...]] = {}  # key -> the methods it registered (a second load is a no-op)


def _key(entry: str) -> str:
    """One key per module: a file by its resolved path (``examples/x.py`` and its absolute path are one
    plugin), a module by its name."""
    return str(Path(entry).resolve()) if entry.endswith(".py") else entry


def _module_name(entry: str) -> str:
    return Path(entry).stem if entry.endswith(".py") else entry


def _import(entry: str):
    if not entry.endswith(".py"):
        return importlib.import_module(entry)
    path = Path(entry)
    if not path.is_file():
        raise FileNotFoundError(f"no such file {str(path.resolve())!r}")
    name = _module_name(entry)
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path.resolve()):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_plugin(entry: str) -> tuple[str, ...]:
    """Import one plugin; returns the names of the methods it registered. ConfigError naming the entry
    if it fails to import or registers no method."""
    from resispec.verify.registry import methods, names  # torch: only a config with plugins pays it

    key = _key(entry)
    if key in _LOADED:
        if set(_LOADED[key]) <= set(names()):
            return _LOADED[key]
        del _LOADED[key]  # its methods were unregistered since: import it afresh
        sys.modules.pop(_module_name(entry), None)
    before = set(names())
    try:
        module = _import(entry)
    except Exception as exc:
        raise ConfigError(
            f"config key 'plugins': {entry!r} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    added = tuple(n for n in names() if n not in before) or tuple(
        m.name for m in methods() if type(m).__module__ == module.__name__
    )  # already imported before: the methods its classes define
    if not added:
        raise ConfigError(
            f"config key 'plugins': {entry!r} registered no verification method (call "
            "resispec.verify.register(YourMethod()) at import)"
        )
    _LOADED[key] = added
    return added


def forget_plugin(entry: str) -> None:
    """Undo ``load_plugin`` (tests, notebooks): unregister its methods and drop its module."""
    from resispec.verify.registry import names, unregister

    registered = set(names())
    for name in _LOADED.pop(_key(entry), ()):
        if name in registered:
            unregister(name)
    sys.modules.pop(_module_name(entry), None)


def load_plugins(config) -> tuple[str, ...]:
    """Import every plugin of a config (validated or raw); returns the methods they registered."""
    added: list[str] = []
    for entry in config.get("plugins") or ():
        added += load_plugin(entry)
    return tuple(added)
