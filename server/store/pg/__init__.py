"""The storage port and the lobby's database on PostgreSQL (``database = "postgresql://…"``).

``sql`` (the SQL plugins and the lobby write, as PostgreSQL reads it),
``schema`` (the core schema and the plugins' tables, migrated), ``port``
(``server.api``'s storage protocols over ``asyncpg``), ``database`` (the
lobby's writer and readers), ``faults`` (a database that went away).
``asyncpg`` is imported only when a PostgreSQL database is opened: it is an
optional dependency (``pip install 'matchlobby[postgresql]'``).
"""
