"""What the app relies on in ``langsmith`` beyond its public API.

- ``langsmith.Client._hide_run_error(error)``: the client passes every run error (a string)
  through it before sending the run, on create and on update. In langsmith 0.15 the only
  public hook that sees run errors is ``anonymizer=``, and it replaces ``hide_inputs``,
  ``hide_outputs`` and ``hide_metadata`` as well, with no way to tell which of the four it
  was handed: it would redact the stop metadata too. So :class:`ErrorHidingClient` keeps the
  public ``hide_*`` callables and overrides this one private method.

``tests/unit_tests/test_frameworks.py`` fails if the method goes, changes its signature, or
stops being called on the errors a run sends.
"""

from __future__ import annotations

from typing import Any

import langsmith

HIDDEN_ERROR_METHOD = "_hide_run_error"
"""The private ``langsmith.Client`` method every run error passes through."""


class ErrorHidingClient(langsmith.Client):
    """A ``langsmith.Client`` that passes every run error through :meth:`hide_error`.

    Subclasses override :meth:`hide_error`; the rest of the client is langsmith's own.
    """

    def hide_error(self, error: Any) -> Any:
        """Return what a run's error becomes before it is sent.

        Args:
            error: The run's error, as langsmith holds it (a string).

        Returns:
            The error to send; this base class sends it unchanged.
        """
        return error

    def _hide_run_error(self, error: Any) -> Any:
        return self.hide_error(error)
