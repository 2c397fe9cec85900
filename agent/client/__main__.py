"""``python -m agent.client``: see :mod:`agent.client.cli`."""

from agent.client.cli import main

raise SystemExit(main())
