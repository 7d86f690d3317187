"""The SADR paper's own figures: its Table 3 (GPT-J on CounterFact), which the claims
quote and the accuracy figure draws beside ours."""

#: The paper's Table 3, GPT-J on CounterFact (%): the unedited model (RS and DNS only),
#: ROME and ROME with SADR.
PAPER_GPTJ = {
    "unedited": {"RS": 79.73, "DNS": 61.99},
    "ROME": {"ES": 99.88, "PS": 99.58, "NS": 80.26, "RS": 11.94, "DNS": 30.43},
    "SADR": {"ES": 99.76, "PS": 96.36, "NS": 80.86, "RS": 27.75, "DNS": 49.35},
}


def _table3(*scores: str) -> str:
    """The paper's GPT-J figures for ``scores``, ROME -> SADR (:data:`PAPER_GPTJ`)."""
    rome, sadr = PAPER_GPTJ["ROME"], PAPER_GPTJ["SADR"]
    moves = ", ".join(f"{s} {rome[s]} -> {sadr[s]}" for s in scores)
    return f"GPT-J, ROME -> SADR: {moves} (Table 3)"
