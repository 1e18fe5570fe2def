"""resispec: reproducibility package for ResiSpec, with an exactness audit of multi-candidate verifiers."""

__version__ = "0.1.0"
