"""The benchmark: what conditional stopping saves, and what it costs.

``python -m bench`` (``make bench``) runs the committed query set through every
configuration and writes ``bench/results/latest.json``, ``latest.md`` and ``latest.png``.
"""
