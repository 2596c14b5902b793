"""Pure rating systems: plain data in, plain data out; no I/O, no asyncio."""
