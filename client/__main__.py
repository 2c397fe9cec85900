"""``python -m client``: see :mod:`client.cli`."""

from client.cli import main

raise SystemExit(main())
