"""Repository tooling: the CLI, the forced-outcome matrix, and the server launchers.

A top-level package beside ``agent``, not inside it: the wheel ``langgraph.json`` deploys
holds ``agent`` only, and nothing in ``agent`` imports this package. ``python -m client`` is the CLI
(:mod:`client.cli`); :mod:`client.scenarios` is the check matrix;
:mod:`client.e2e`, :mod:`client.devserver` and :mod:`client.prodserver`
start servers; :mod:`client.diagrams` renders the graphs' Mermaid diagrams.
"""
