"""Which extractor consolidation runs: `ARCHIVIST_EXTRACTOR` names it.

It lives apart from the interface (threads.extractors.base) so that the
extractors import the interface and this module imports the extractors: the
dependency runs one way.
"""

from __future__ import annotations

from django.conf import settings

from threads.extractors.base import Extractor
from threads.extractors.llm import LLMExtractor
from threads.extractors.rules import RulesExtractor


def get_extractor(name: str | None = None) -> Extractor:
    name = name or settings.CONSOLIDATION_EXTRACTOR
    if name == "llm":
        return LLMExtractor(
            base_url=settings.EXTRACTOR_LLM_BASE_URL,
            model=settings.EXTRACTOR_LLM_MODEL,
            key=settings.EXTRACTOR_LLM_KEY,
            timeout=settings.EXTRACTOR_LLM_TIMEOUT_SECONDS,
        )
    return RulesExtractor()
