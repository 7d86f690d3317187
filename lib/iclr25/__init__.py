"""iclr25: the methods of the ICLR 2025 executable book.

Each paper is one package of :mod:`iclr25.chapters` (``iclr25.chapters.sro``, ...): its
``__init__.py`` holds the chapter's parameter schema (``PARAMETERS``), smoke overrides
(``SMOKE``) and the registry of the claims it tests (``CLAIMS``); ``method.py`` the
paper's method; ``figures.py`` its figures. A chapter never imports
another; what two chapters share lives at the top of the package:

* ``iclr25.core`` -- parameters, seeds, devices, the cache of trained artefacts, the
  training loop, offline figures, widgets, claims (``core.claims``) with their
  intervals (``core.stats``) and timing;
* ``iclr25.llm`` -- language models offline (SmolLM2, tiny Llamas trained here), named
  sites to read and write their insides, cloze scoring, and backends (a local model or
  an OpenAI-compatible endpoint);
* ``iclr25.editing`` -- knowledge editing: facts the model knows, edit cases, the
  metrics, ROME and the live editor;
* ``iclr25.vision`` -- small image data sets and classifiers, ``image_grid``;
* ``iclr25.tabular`` -- scikit-learn's bundled tables, split and scaled, as tables;
* ``iclr25.toc`` -- the table of contents as data; ``iclr25.scoreboard`` -- every
  chapter's claims in one table; ``iclr25.run`` and ``iclr25.cli`` (``python -m
  iclr25``) execute a chapter.
"""

__version__ = "0.1.0"
