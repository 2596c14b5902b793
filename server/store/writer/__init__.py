"""The one writer, by job: the commit pipeline (``pipeline``), what a batch holds (``batch``),
the job's transaction handle (``jobs``), queued writes and statement grouping (``batching``)."""
