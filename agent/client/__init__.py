"""Client tooling: the CLI, the forced-outcome matrix, and the server launchers.

The graphs never import this package. ``python -m agent.client`` is the CLI
(:mod:`agent.client.cli`); :mod:`agent.client.scenarios` is the check matrix;
:mod:`agent.client.e2e`, :mod:`agent.client.devserver` and :mod:`agent.client.prodserver`
start servers; :mod:`agent.client.diagrams` renders the graphs' Mermaid diagrams.
"""
