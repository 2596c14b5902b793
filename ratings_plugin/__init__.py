"""Rating systems (pure) and the plugin that applies them to lobby events."""
