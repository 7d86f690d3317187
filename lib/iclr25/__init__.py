"""iclr25: the methods of the ICLR 2025 executable book.

One module per paper (``iclr25.sro``, ...) holds that chapter's method, its parameter
schema (``PARAMETERS``) and its smoke overrides (``SMOKE``); ``iclr25.core`` is the
substrate they share; ``iclr25.chapters`` lists the chapters; ``iclr25.scoreboard``
gathers their claims; ``python -m iclr25`` runs one (see ``iclr25.cli``).
"""

__version__ = "0.1.0"
