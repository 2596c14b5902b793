"""Plain Elo as a matchlobby rating system, written on ``server.api.SystemBase``."""
