"""`python -m iclr25 replicate`: a chapter at several seeds on Dask, each claim's outcome
seed by seed, and a flag where a claim holds at one seed and is contradicted at another."""

import json
from dataclasses import asdict

import pytest

from iclr25 import replicate, sweep, toc
from iclr25.cli import main
from iclr25.core import Claim, ParameterError, claim_from_record

SEEDS = ("1000", "1001")
TEMPLATE_CLAIMS = list(toc.get("_template").module().CLAIMS)


@pytest.fixture(scope="module")
def replicated(cli, tmp_path_factory):
    """The template at seeds 1000 and 1001, smoke scale, on a LocalCluster of 2 workers:
    (result, folder)."""
    out = tmp_path_factory.mktemp("replicate")
    result = cli(
        "replicate", "_template", "--seeds", ",".join(SEEDS), "--smoke", "--workers", "2",
        "--out", str(out),
    )  # fmt: skip
    return result, out


def recorded(out, seed: int) -> dict[str, dict]:
    """The claims that the point of ``seed`` wrote, by id: the run's own record."""
    for path in (out / "points").glob("*/_template.claims.json"):
        record = json.loads(path.read_text())
        if record["parameters"]["seed"] == seed:
            return {c["id"]: c for c in record["claims"]}
    raise AssertionError(f"no point of seed {seed} in {out}")


@pytest.mark.smoke
def test_a_smoke_run_over_two_seeds_of_the_template_prints_the_table(replicated):
    result, out = replicated
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("claim "))
    assert header.split() == ["claim", "kind", "seed", "1000", "seed", "1001", "flag"]
    for cid in TEMPLATE_CLAIMS:  # one row per claim, in registry order, as each point recorded it
        row = next(line for line in lines if line.startswith(f"{cid} "))
        at = [recorded(out, int(seed))[cid] for seed in SEEDS]
        assert row.split()[1:4] == [at[0]["kind"], at[0]["outcome"], at[1]["outcome"]]
    rows = [line.split()[0] for line in lines if line.split()[:1] in ([c] for c in TEMPLATE_CLAIMS)]
    assert rows == TEMPLATE_CLAIMS
    assert "3 claims at 2 seeds: 0 flips, 0 varies" in result.stdout
    table = lines[
        lines.index("_template at seeds 1000, 1001 (smoke: a scale that decides nothing)") :
    ]
    assert max(len(line) for line in table if not line.startswith("wrote ")) <= replicate.WIDTH
    markdown = (out / "replicate.md").read_text()
    assert "| claim | kind | seed 1000 | seed 1001 | flag |" in markdown
    beats = recorded(out, 1000)["beats-intercept"]
    assert f"| `beats-intercept` | paper | {beats['outcome']} {beats['estimate']:.2g} [" in markdown
    assert f"wrote {out / 'replicate.md'}" in result.stdout


@pytest.mark.smoke
def test_replicating_again_into_the_folder_reruns_nothing_and_prints_the_same_table(
    cli, replicated
):
    first, out = replicated
    again = cli("replicate", "_template", "--seeds", ",".join(SEEDS), "--smoke", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "2 points, 2 finished before" in again.stdout and "LocalCluster" not in again.stdout
    table = first.stdout[first.stdout.index("_template at seeds") :]
    assert table in again.stdout


@pytest.mark.smoke
def test_replicate_runs_on_the_cluster_given_by_its_address_with_the_same_seed_s_claims(
    cli, replicated, tmp_path
):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster:
        result = cli(
            "replicate", "_template", "--seeds", "1001,1002", "--smoke", "--scheduler",
            cluster.scheduler_address, "--out", str(tmp_path),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"Dask scheduler {cluster.scheduler_address}: 1 worker" in result.stdout
    assert "seed 1001" in result.stdout and "seed 1002" in result.stdout
    assert recorded(tmp_path, 1001) == recorded(replicated[1], 1001)  # a seed is a seed
    at = [recorded(tmp_path, seed) for seed in (1001, 1002)]
    for cid in TEMPLATE_CLAIMS:  # each flag is the one the points' own claims give
        row = next(line for line in result.stdout.splitlines() if line.startswith(f"{cid} "))
        flag = replicate.flag([claim_from_record(a[cid]) for a in at])
        assert row.endswith(f"  {flag}") if flag else not row.endswith(("FLIPS", "varies"))


@pytest.mark.parametrize(
    "seeds, words",
    [
        ("1,x", "--seeds '1,x': 'x' is not a whole number"),
        ("", "--seeds is empty"),
        (" ", "--seeds is empty"),
        ("1000,-1", "-1 is negative"),
        ("-3", "-3 is negative"),
        ("1000,1001,1000", "1000 is listed twice"),
        ("1,4294967296", "4294967296 is above 4294967295"),
        ("1,,2", "an entry is empty"),
        ("2.5", "'2.5' is not a whole number"),
    ],
)
def test_a_bad_seed_list_gets_one_line_and_runs_nothing(cli, tmp_path, seeds, words):
    out = tmp_path / "replicate"
    result = cli("replicate", "_template", "--seeds", seeds, "--out", str(out))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iclr25: error: "), result.stderr
    assert words in lines[0] and replicate.ACCEPTED in lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (("--seeds", "1,2", "-p", "seed=3"), "-p seed=... fixes the seed"),
        (("--seeds", "1,2", "-p", "nope=3"), "unknown parameter 'nope' for _template"),
        (("--seeds", "1", "--workers", "2", "--scheduler", "tcp://h:1"), "--workers starts a"),
        ((), "the following arguments are required: --seeds"),
    ],
)
def test_other_bad_input_to_replicate_gets_one_line(cli, tmp_path, args, words):
    result = cli("replicate", "_template", *args, "--out", str(tmp_path / "replicate"))
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


# ---------------------------------------------------------------------------------
# The table and its flags, on hand-made claims
# ---------------------------------------------------------------------------------


def claim(
    id: str,
    outcome: str,
    *,
    kind: str = "paper",
    estimate: float | None = None,
    value: object = None,
    gap: bool = False,
    blocked: bool = False,
) -> Claim:
    """A claim of the template as a run records it; an estimate gets the interval +-0.1."""
    interval = {}
    if estimate is not None:
        interval = {"estimate": estimate, "low": estimate - 0.1, "high": estimate + 0.1, "n": 30}
    return Claim(
        chapter="_template",
        id=id,
        kind=kind,
        statement="s",
        paper="p",
        control="c",
        rule="r",
        measured="m",
        outcome=outcome,
        value=value,
        diagnosis="expected at this scale" if gap else None,
        blocked_by=["noise-level"] if blocked else [],
        **interval,
    )


def test_a_claim_that_holds_at_one_seed_and_is_contradicted_at_another_flips():
    holds, contradicted = claim("c", "holds"), claim("c", "contradicted")
    inconclusive = claim("c", "inconclusive")
    assert replicate.flag([holds, contradicted]) == "FLIPS"
    assert replicate.flag([contradicted, inconclusive, holds]) == "FLIPS"
    assert replicate.flag([holds, holds]) == ""
    assert replicate.flag([contradicted, contradicted]) == ""
    assert replicate.flag([holds, inconclusive]) == "varies"
    assert replicate.flag([holds, None]) == ""  # a seed that did not run does not count
    # a hold whose setup claim missed is inconclusive, not a hold
    assert replicate.flag([claim("c", "holds", blocked=True), contradicted]) == "varies"
    # a declared gap changes the status, not what the rule made of the evidence
    assert replicate.flag([holds, claim("c", "contradicted", gap=True)]) == "FLIPS"


def test_the_table_flags_the_flip_seed_by_seed_in_registry_order():
    runs = {
        1000: [
            claim("beats-intercept", "holds", estimate=0.12),
            claim("slope-recovered", "holds", value=1.234),
            claim("noise-level", "holds", kind="setup", value=0.98),
        ],
        1001: [
            claim("noise-level", "holds", kind="setup", value=1.01),
            claim("slope-recovered", "holds", value=-0.5),
            claim("beats-intercept", "contradicted", estimate=-0.2),
        ],
    }
    table = replicate.replication("_template", [1000, 1001], runs)
    assert [r.claim for r in table.rows] == TEMPLATE_CLAIMS
    assert [r.flag for r in table.rows] == ["", "", "FLIPS"]
    assert table.summary() == "3 claims at 2 seeds: 1 flips (beats-intercept), 0 varies"
    lines = replicate.text(table).splitlines()
    row = lines.index(next(line for line in lines if line.startswith("beats-intercept")))
    assert lines[row].split() == [
        "beats-intercept", "paper", "holds", "contradicted,", "FAILED", "FLIPS"
    ]  # fmt: skip
    assert lines[row + 1].split() == ["0.12", "[0.02,0.22]", "-0.2", "[-0.3,-0.1]"]
    assert lines[lines.index(next(x for x in lines if x.startswith("slope-"))) + 1].split() == [
        "1.23",
        "-0.5",
    ]
    markdown = replicate.markdown(table)
    assert (
        "| `beats-intercept` | paper | holds 0.12 [0.02,0.22] "
        "| contradicted, FAILED -0.2 [-0.3,-0.1] | FLIPS |" in markdown
    )
    assert "| `noise-level` | setup | holds 0.98 | holds 1.01 |  |" in markdown


def test_a_cell_gives_the_rule_s_outcome_and_marks_a_status_that_differs():
    assert replicate.outcome_text(claim("c", "holds")) == "holds"
    assert replicate.outcome_text(claim("c", "inconclusive")) == "inconclusive, FAILED"
    assert replicate.outcome_text(claim("c", "inconclusive", gap=True)) == "inconclusive, known gap"
    assert replicate.outcome_text(claim("c", "contradicted", gap=True)) == "contradicted, known gap"
    assert replicate.outcome_text(claim("c", "contradicted")) == "contradicted, FAILED"
    assert replicate.outcome_text(claim("c", "holds", gap=True)) == "holds, gap declared"
    assert replicate.outcome_text(claim("c", "holds", blocked=True)) == "holds, blocked"
    assert replicate.number_text(claim("c", "holds", value={"slope": 1.0})) == ""
    assert replicate.number_text(claim("c", "holds", value=12345.6)) == "12346"


def test_many_seeds_continue_in_blocks_within_the_width():
    seeds = list(range(1000, 1008))
    runs = {s: [claim("beats-intercept", "contradicted", gap=True, estimate=-0.123)] for s in seeds}
    runs[1007] = [claim("beats-intercept", "holds", estimate=0.5)]
    text = replicate.text(replicate.replication("_template", seeds, runs))
    lines = text.splitlines()
    assert max(map(len, lines)) <= replicate.WIDTH
    assert sum(line.startswith("claim ") for line in lines) > 1  # more than one block
    for s in seeds:
        assert text.count(f"seed {s}") == 1
    assert all(line.rstrip().endswith("FLIPS") for line in lines if line.startswith("beats-"))
    assert "not recorded" in text  # the other claims, which these runs lack


@pytest.mark.smoke
def test_a_seed_that_failed_shows_error_is_named_after_the_table_and_exits_1(
    monkeypatch, capsys, tmp_path
):
    claims = [
        claim(cid, "holds", kind=k) for cid, k in zip(TEMPLATE_CLAIMS, ("setup", "paper", "paper"))
    ]
    records = [
        {"error": None, "claims": [asdict(c) for c in claims]},
        {"error": "cell 4: ValueError: no points\nTraceback ...", "claims": []},
    ]

    def finished(points_, out, **cluster):  # the cluster's part, done
        return sweep.Sweep(list(points_), records, 0, None, 1.0)

    monkeypatch.setattr(sweep, "sweep", finished)
    status = main(
        ["replicate", "_template", "--seeds", "1000,1001", "--smoke", "--out", str(tmp_path)]
    )
    assert status == 1
    out = capsys.readouterr().out
    assert "seed 1001 failed: cell 4: ValueError: no points" in out.splitlines()
    assert "noise-level      setup  holds      error" in out
    assert "3 claims at 2 seeds: 0 flips, 0 varies; 1 seed failed to run" in out
    markdown = (tmp_path / "replicate.md").read_text()
    assert "- seed 1001 failed: cell 4: ValueError: no points" in markdown
    assert "| `noise-level` | setup | holds | error |  |" in markdown


def test_parse_seeds_keeps_the_order_given_and_refuses_a_seed_the_chapter_cannot_take():
    assert replicate.parse_seeds("1002, 1000,1001") == [1002, 1000, 1001]
    assert replicate.parse_seeds(str(2**32 - 1)) == [2**32 - 1]
    with pytest.raises(ParameterError, match="is above"):
        replicate.parse_seeds(str(2**32))
    points = replicate.seed_points("_template", [1000, 1001], {"n": 60}, smoke=True)
    assert [p.label for p in points] == ["seed=1000", "seed=1001"]
    assert [p.parameters["n"] for p in points] == [60, 60]


def test_the_sweep_page_has_a_colour_for_every_claim_status():
    from iclr25.core.outcomes import STATUSES

    # a seed whose setup claim misses makes the claims resting on it inconclusive
    assert set(STATUSES) <= set(sweep.STATUS_COLOURS)


def test_an_out_folder_that_cannot_be_created_gives_one_line(cli, tmp_path):
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "runs"  # under a file: no folder can be made there
    result = cli("replicate", "_template", "--seeds", "1000,1001", "--smoke", "--out", str(out))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"iclr25: error: --out {out}: cannot create or write this folder (Not a directory)"
    ]
