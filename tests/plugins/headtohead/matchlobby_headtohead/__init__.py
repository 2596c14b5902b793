"""A matchlobby plugin: ``h2h A B``, how often each of two players beat the other on each ladder.

Written from docs/PLUGINS.md alone, on ``server.api`` and its ``PluginBase``:
:mod:`~matchlobby_headtohead.tally` is the count (pure),
:mod:`~matchlobby_headtohead.plugin` the command. It keeps no table and no state:
every answer is read from the match log.
"""
