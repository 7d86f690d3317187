"""The chapters' methods: one module per paper, named by the chapter's slug.

``iclr25.chapters.<slug>`` holds the paper's method, the chapter's parameter schema
(``PARAMETERS``), its smoke overrides (``SMOKE``) and the registry of the claims it
tests (``CLAIMS``: statement, rule, control, declared gap). A chapter imports the
shared modules at the top of the package (``iclr25.core``, ``iclr25.llm``, ...), never
another chapter: code that two chapters need moves up there.
"""
