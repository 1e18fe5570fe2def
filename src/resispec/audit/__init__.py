"""Stage 5, exactness audit and tidy statistics.

Owns: the per-node exactness check of logged nodes (`exactness`: each verifier's exact law against the
target, KL and TV with scipy, acceptance against alpha*), the statistics (`statistics`: bootstrap
intervals, per-prompt metrics) and the tidy tables (`aggregate`).
May import: `resispec.verify`.
"""
