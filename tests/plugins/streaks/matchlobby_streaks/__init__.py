"""A matchlobby plugin: each player's current and best winning streak on every ladder.

Built on ``server.api`` alone, as any plugin living outside the lobby's own
repository would be: :mod:`~matchlobby_streaks.runs` is the rule (pure),
:mod:`~matchlobby_streaks.table` its table, :mod:`~matchlobby_streaks.plugin`
the hooks and the ``streak`` command.
"""
