"""Which rating system predicts a community's results best: each system's predictions,
replayed over a ladder's log or a results file, scored against what happened.

Pure: no I/O and no asyncio; the commands read the log or the file and print the report.
"""

from ratings_plugin.evaluation.plain import evaluate_plain
from ratings_plugin.evaluation.report import evaluate
from ratings_plugin.evaluation.scores import CLAMP, accuracy, brier, log_loss

__all__ = ["CLAMP", "accuracy", "brier", "evaluate", "evaluate_plain", "log_loss"]
