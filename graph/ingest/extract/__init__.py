"""Edge extraction from prose: extractors propose, validation checks, curators decide.

- ``base``: the interface (:class:`Statement`, :class:`Vocabulary`, errors);
- ``local``: relation phrases of the vocabulary plus names of the bank (no network);
- ``llm``: an OpenAI-compatible chat endpoint, with a second gleaning pass;
- ``mentions``: finding and resolving names, with abstention;
- ``validate``: the checks every statement passes before it is queued;
- ``run``: the service that reads entries (incrementally) and queues proposals;
- ``jobs``: the background job and its Celery task.
"""

from __future__ import annotations

EXTRACTORS = ("local", "llm")


def get_extractor(name: str, index):
    """The extractor called ``name`` (``local`` needs the run's mention index)."""
    from kb.errors import InvalidInput

    if name == "local":
        from graph.ingest.extract.local import LocalExtractor

        return LocalExtractor(index)
    if name == "llm":
        from graph.ingest.extract.llm import LLMExtractor

        return LLMExtractor()
    raise InvalidInput(
        f"Unknown extractor {name!r}; use one of: {', '.join(EXTRACTORS)}.",
        code="unknown_extractor",
        fields={"extractor": "Unknown."},
    )
