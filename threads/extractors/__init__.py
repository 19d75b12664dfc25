"""Extractors: what a thread's events propose to remember (base: the interface; rules and llm: the two kinds)."""
