"""The stop on AgentDojo: its suites' own tools and tasks, judged by its own ``utility()``.

``python -m bench.agentdojo`` (``make bench-agentdojo``) runs AgentDojo's four suites offline
with a perfect model that replays each task's ground truth, under every configuration of
:mod:`bench.agentdojo.configs`, and writes ``bench/results/agentdojo.json`` and ``.md``.
"""
