"""Timestamps as the log stores them: the lobby's clock (:mod:`server.api.clock`)."""

from __future__ import annotations

from server.api.clock import now, today

__all__ = ["now", "today"]
