"""Version characterization: the forced-outcome suite and the framework pins.

``tests/compat/test_characterization.py`` runs in the project's own environment as part
of ``make test``. ``make compat`` (``python -m tests.compat.run``) runs it again, with
``tests/unit_tests/test_matrix.py``, in throwaway environments on other langchain and
langgraph releases.
"""
