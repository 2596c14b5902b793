"""The fixtures every test folder shares: ``tests/kit/sharedkit.py`` as a plugin.

pyproject.toml's ``pythonpath = ["tests/kit"]`` puts it on ``sys.path`` before this
file is read; each folder's ``conftest.py`` adds its own fixtures (``template_db``
for the shared ``db_path``).
"""

pytest_plugins = ["sharedkit"]
