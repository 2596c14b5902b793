"""The one refusal of the operator's commands (``user``, ``backup``, ``restore``, ``check``,
``copy``): the command line prints its message as one line and exits with status 2."""


class Refused(Exception):
    """The command will not do what was asked (the reason is the message, one line)."""
