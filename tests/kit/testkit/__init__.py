"""The test kit every test folder uses: one module a job, imported as ``testkit.<module>``.

On ``sys.path`` through pyproject.toml's ``pythonpath = ["tests/kit"]`` (not ``tests``
itself: its folders ``tests/server`` and ``tests/clients`` would be found as namespace
packages in place of ``server`` and ``clients``).

- :mod:`~testkit.constants`: the accounts, the fast configuration, the error codes, the
  liveness bound.
- :mod:`~testkit.results`: results files (the CSV format).
- :mod:`~testkit.cli`: ``matchlobby`` as a real process (sub-commands, the batch client,
  accounts made with ``user add``).
- :mod:`~testkit.db`: a database read back (or changed) beside the server's own code: an
  SQLite file with plain ``sqlite3``, a PostgreSQL database with ``asyncpg``.
- :mod:`~testkit.postgres`: the run's PostgreSQL cluster, a database a test
  (:class:`~testkit.postgres.PgDb`), a cluster of a test's own to stop and start.
- :mod:`~testkit.fibs`, :mod:`~testkit.glicko`: FIBS and Glicko-2 written out independently
  of the server; :mod:`~testkit.books`: a system's book driven by plain games;
  :mod:`~testkit.zeta`: a made-up system a real server serves; :mod:`~testkit.shapes`:
  ladders described for the clients' renderers; :mod:`~testkit.recompute`: a server's ladders
  against ``matchlobby rate``; :mod:`~testkit.replays`: a FIBS log written into the tables and
  ``matchlobby replay`` run on it.
- :mod:`~testkit.clients`: a client that keeps its replies, matches started and played,
  refusals expected, the round trip that settles pushes, a request held in flight.
- Servers: :mod:`~testkit.server_loop` (in the test's event loop),
  :mod:`~testkit.server_thread` (on a loop of its own in a thread),
  :mod:`~testkit.server_process` (``matchlobby serve`` as a process).
- :mod:`~testkit.probes`: a timing client, a bystander, a socket that stops reading, waiting
  for a condition; :mod:`~testkit.logs`: log capture; :mod:`~testkit.figures`: measured
  figures reported after the run.
- :mod:`~testkit.terminal`: a pseudo-terminal (and help's listing read back);
  :mod:`~testkit.browser`: Chromium; :mod:`~testkit.powercut`: a power cut simulated from a
  record of writes and syncs.
- :mod:`~testkit.fixtures`: the shared fixtures (loaded by the repository's ``conftest.py``).
"""
