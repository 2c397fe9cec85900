"""Shared fixtures of the library suite."""

from __future__ import annotations
