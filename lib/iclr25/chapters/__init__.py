"""The chapters: one package per paper, named by the chapter's slug.

``iclr25.chapters.<slug>/__init__.py`` says what the chapter decides: the paper and its
equations (the docstring), the parameter schema (``PARAMETERS``), its smoke overrides
(``SMOKE``) and the registry of the claims it tests (``CLAIMS``: statement, rule,
control, declared gap). ``method.py`` holds the paper's method, ``figures.py`` its
figures, and further files the real seams (``models.py``, ``store.py``). A chapter imports the
shared modules at the top of the package (``iclr25.core``, ``iclr25.llm``, ...), never
another chapter: code that two chapters need moves up there.
"""
