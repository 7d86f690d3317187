"""`python -m iclr25 sweep`: a chapter over a grid on a real Dask cluster (sro, smoke scale)."""

import json
import os
import shutil

import pandas as pd
import pytest

from iclr25 import build, cluster, sweep, toc
from iclr25.core import ParameterError

GRID = ("-g", "seed=0,1", "-g", "m=400,500")  # m=400: sro's smoke value


def cores() -> int:
    return build.cores()


@pytest.fixture(scope="module")
def swept(cli, tmp_path_factory):
    """A 2 x 2 smoke sweep of sro on a LocalCluster of 2 workers: (result, folder)."""
    out = tmp_path_factory.mktemp("sweep")
    result = cli("sweep", "sro", *GRID, "--smoke", "--workers", "2", "--out", str(out))
    return result, out


@pytest.mark.smoke
def test_local_cluster_runs_a_2x2_smoke_sweep(swept):
    result, out = swept
    assert result.returncode == 0, result.stderr
    table = pd.read_parquet(out / "sweep.parquet")
    claims = list(toc.get("sro").module().CLAIMS)
    assert len(table) == 4 * len(claims)  # one row per point and claim
    assert sorted(set(zip(table["seed"], table["m"], strict=True))) == [
        (0, 400),
        (0, 500),
        (1, 400),
        (1, 500),
    ]
    for _, rows in table.groupby("point"):
        assert sorted(rows["claim"]) == sorted(claims) and rows["error"].isna().all()
    # the table's statuses are those of the points' own claims files
    recorded = [
        c["status"]
        for f in (out / "points").glob("*/sro.claims.json")
        for c in json.loads(f.read_text())["claims"]
    ]
    assert table["status"].value_counts().to_dict() == pd.Series(recorded).value_counts().to_dict()
    assert table["worker"].nunique() == 2  # both workers ran points
    assert (table["threads"] == max(1, cores() // 2)).all()
    for claim, rows in table.groupby("claim"):
        kind = rows["kind"].iloc[0]
        assert f"  {claim} ({kind}): {rows['holds'].sum()} of 4 (" in result.stdout
    assert "4 points ran in" in result.stdout and "smoke sweep" in result.stdout
    page = (out / "sweep.html").read_text()
    assert "Plotly.newPlot" in page and "<script src=" not in page  # plotly.js inline
    for point in (out / "points").iterdir():
        assert {f.name for f in point.iterdir()} == {"sro.ipynb", "sro.claims.json", "point.json"}


@pytest.mark.smoke
def test_resume_skips_finished_points_and_redoes_a_truncated_one(cli, swept, tmp_path):
    out = tmp_path / "sweep"
    shutil.copytree(swept[1], out)
    before = {p.name: (p / "point.json").read_text() for p in (out / "points").iterdir()}
    (out / "points" / ".0123.partial").mkdir()  # left by a sweep that was killed
    again = cli("sweep", "sro", *GRID, "--smoke", "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert "4 points, 4 finished before" in again.stdout and "LocalCluster" not in again.stdout
    assert {p.name: (p / "point.json").read_text() for p in (out / "points").iterdir()} == before
    truncated = sorted(before)[0]
    claims = out / "points" / truncated / "sro.claims.json"
    claims.write_text(claims.read_text()[:100])
    third = cli("sweep", "sro", *GRID, "--smoke", "--workers", "1", "--out", str(out))
    assert third.returncode == 0, third.stderr
    assert "4 points, 3 finished before" in third.stdout and "1 point ran in" in third.stdout
    after = {p.name: (p / "point.json").read_text() for p in (out / "points").iterdir()}
    assert set(after) == set(before)  # the stale partial folder is gone
    assert [k for k in after if after[k] != before[k]] == [truncated]
    assert json.loads(claims.read_text())["claims"]
    assert len(pd.read_parquet(out / "sweep.parquet")) == 4 * len(toc.get("sro").module().CLAIMS)


@pytest.mark.smoke
def test_a_failing_point_is_recorded_on_a_cluster_given_by_its_address(cli, tmp_path):
    from distributed import LocalCluster

    # s=200 is a valid parameter, but the smoke problem has only d=100 features
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as local:
        result = cli(
            "sweep", "sro", "-g", "s=3,200", "--smoke", "--scheduler",
            local.scheduler_address, "--out", str(tmp_path),
        )  # fmt: skip
    assert result.returncode == 1
    failed = [line for line in result.stderr.splitlines() if line.startswith("iclr25: ")]
    assert len(failed) == 1 and "point s=200 failed: cell " in failed[0]
    assert "ValueError" in failed[0]
    table = pd.read_parquet(tmp_path / "sweep.parquet")
    good, bad = table[table["s"] == 3], table[table["s"] == 200]
    assert len(good) == len(toc.get("sro").module().CLAIMS) and good["error"].isna().all()
    assert len(bad) == 1 and bad["status"].item() == "error" and "ValueError" in bad["error"].item()
    assert (table["threads"] == max(1, cores() // 2)).all()  # two worker threads on this host
    record = json.loads((tmp_path / "points" / bad["point"].item() / "point.json").read_text())
    assert record["varied"] == {"s": 200} and "ValueError" in record["error"]
    assert (tmp_path / "points" / bad["point"].item() / "sro.ipynb").is_file()
    assert "Failed points" in (tmp_path / "sweep.html").read_text()


@pytest.mark.parametrize(
    "args, words",
    [
        (("-g", "seed=0,x"), "parameter 'seed' got 'x'; accepted: a int >= 0"),
        (("-g", "m=500,4"), "parameter 'm' got 4; accepted: a int >= 8"),
        (("-g", "nope=1,2"), "unknown parameter 'nope' for sro; accepted: "),
        (("-g", "seed"), "-g 'seed' is not KEY=V1,V2,..."),
        (("-g", "seed=0,0"), "-g 'seed=0,0' lists a value twice"),
        (("-g", "seed=0", "-g", "seed=1"), "-g gives 'seed' twice"),
        (("-g", "seed=0,1", "-p", "seed=2"), "parameter 'seed' is both swept (-g) and fixed (-p)"),
        (("-g", "seed=0", "--workers", "0"), "argument --workers: expected a whole number >= 1"),
        (("-g", "seed=0", "--workers", "2", "--scheduler", "tcp://h:1"), "--workers starts a"),
    ],
)
def test_bad_grid_gives_one_line_and_runs_nothing(cli, tmp_path, args, words):
    out = tmp_path / "sweep"
    result = cli("sweep", "sro", *args, "--out", str(out))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr
    assert not out.exists()


@pytest.mark.smoke
def test_a_sweep_point_has_the_claims_of_run_with_its_seed(cli, swept, tmp_path):
    table = pd.read_parquet(swept[1] / "sweep.parquet")
    smoke_m = toc.get("sro").module().SMOKE["m"]
    point = table[(table["seed"] == 1) & (table["m"] == smoke_m)].iloc[0]  # smoke's own m
    env = {**os.environ, **{v: str(point["threads"]) for v in build.THREAD_VARIABLES}}
    result = cli("run", "sro", "--smoke", "-p", "seed=1", "--out", str(tmp_path), env=env)
    assert result.returncode == 0, result.stderr
    ran = json.loads((tmp_path / "sro.claims.json").read_text())
    swept_ = json.loads((swept[1] / "points" / point["point"] / "sro.claims.json").read_text())
    assert ran["parameters"] == swept_["parameters"]
    for a, b in zip(ran["claims"], swept_["claims"], strict=True):
        if "wall" in a["measured"]:  # a timing claim: wall-clock times differ run to run
            assert (a["id"], a["rule"]) == (b["id"], b["rule"])
        else:
            assert a == b


# ---------------------------------------------------------------------------------
# The pieces, without a cluster
# ---------------------------------------------------------------------------------


def test_parse_grid_checks_each_value_and_splits_on_semicolons_when_present():
    assert sweep.parse_grid("sro", ["seed=2,0", "noise=0.5,1"]) == {
        "seed": [2, 0],
        "noise": [0.5, 1.0],
    }
    assert sweep.parse_grid("sro", ["device=cpu;auto"]) == {"device": ["cpu", "auto"]}
    with pytest.raises(ParameterError, match="parameter 'noise' got -1.0; accepted: a float >= 0"):
        sweep.parse_grid("sro", ["noise=1,-1"])


def test_grid_points_vary_the_first_parameter_slowest_and_hash_their_parameters():
    grid = {"seed": [0, 1], "m": [400, 500]}
    points = sweep.grid_points("sro", grid, {"n_iter": 4}, smoke=True)
    assert [p.label for p in points] == [
        "seed=0, m=400",
        "seed=0, m=500",
        "seed=1, m=400",
        "seed=1, m=500",
    ]
    smoke = toc.get("sro").module().SMOKE
    first = points[0].parameters  # book defaults < smoke < fixed < the point's own
    assert (first["n"], first["n_iter"], first["seed"], first["m"]) == (smoke["n"], 4, 0, 400)
    assert len({p.key for p in points}) == 4
    again = sweep.grid_points("sro", {"m": [400], "seed": [0]}, {"n_iter": 4}, smoke=True)
    assert again[0].key == points[0].key  # the same parameters, the same point
    book = sweep.grid_points("sro", {"seed": [0]})[0]
    assert book.parameters["n"] == toc.get("sro").module().PARAMETERS["n"].default
    assert book.key not in {p.key for p in points}


def _record(key: str, seed: int, statuses: list[bool], error: str | None = None) -> dict:
    claims = [
        {
            "chapter": "sro",
            "id": f"c{k}",
            "kind": "paper",
            "statement": "s",
            "paper": "p",
            "control": "c",
            "rule": "≥ 1",
            "measured": f"{0.5 + k + seed}" if k == 0 else "text",
            "outcome": "holds" if holds else "contradicted",
            "diagnosis": None,
            **({"estimate": 0.5 + seed, "low": seed, "high": 1.0 + seed, "n": 9} if k else {}),
        }
        for k, holds in enumerate(statuses)
    ]
    return {
        "key": key,
        "parameters": {"seed": seed, "m": 400},
        "claims": [] if error else claims,
        "error": error,
        "wall_s": 1.0,
        "worker": "tcp://w:1",
        "threads": 1,
        "started": "2026-01-01T00:00:00+00:00",
    }


def test_table_has_a_row_per_point_and_claim_and_holding_counts_them():
    records = [
        _record("a", 0, [True, False]),
        _record("b", 1, [True, True]),
        _record("c", 2, [], error="cell 3: ValueError: no"),
    ]
    table = sweep.table(records)
    assert list(table.columns) == ["point", "seed", "m", *sweep.COLUMNS[1:]]
    assert len(table) == 5 and table["status"].tolist()[-1] == "error"
    assert table["value"].iloc[[0, 2]].tolist() == [0.5, 1.5]  # a measurement that is a number
    assert table["value"].iloc[[1, 3, 4]].isna().all()
    held = sweep.holding(table).set_index("claim")
    assert held.loc["c0", "holds"] == 2 and held.loc["c1", "holds"] == 1
    assert held.loc["c1", "share"] == 0.5
    assert set(held.loc["c1", "statuses"].split(", ")) == {"holds 1", "FAILED 1"}
    assert held["points"].tolist() == [2, 2]  # the failed point measured nothing


def test_table_takes_a_claims_numeric_value_where_its_measured_text_is_words():
    record = _record("a", 0, [True, True])
    record["claims"][1]["value"] = 0.25
    record["claims"][0]["value"] = {"slope": -0.5, "r2": 0.9}  # not one number: the text
    assert sweep.table([record])["value"].tolist() == [0.5, 0.25]


def test_figures_are_a_line_over_one_parameter_and_a_heatmap_over_two():
    records = [_record(f"p{s}", s, [s % 2 == 0, True]) for s in range(3)]
    table = sweep.table(records)
    line = sweep.claim_figure(table, "c0", ["seed"])
    assert line.data[0].type == "scatter" and list(line.data[0].y) == [0.5, 1.5, 2.5]
    assert sweep.claim_figure(table, "c1", ["seed"]).layout.yaxis.ticktext == ("no", "yes")
    heat = sweep.claim_figure(table, "c1", ["seed", "m"])
    assert heat.data[0].type == "heatmap" and heat.data[0].z.shape == (1, 3)
    assert table["low"].tolist()[1::2] == [0.0, 1.0, 2.0]  # c1 has an interval, c0 none
    page = sweep.page_html("sro", table, ["seed"])
    assert page.count("Plotly.newPlot") == 2 and "<script src=" not in page


@pytest.mark.smoke
def test_gpus_give_each_local_worker_its_own_device():
    """Left alone, four workers on a four-GPU machine all used the first: each now sees
    one device alone, which the kernels of its points inherit (fake ids will do)."""
    gpus = cluster.parse_gpus("7,GPU-fake")
    assert gpus == ["7", "GPU-fake"]
    with cluster.connect(gpus=gpus) as client:  # one worker per device
        seen = client.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
    assert sorted(seen.values()) == sorted(gpus)


@pytest.mark.smoke
def test_a_cluster_is_found_by_its_scheduler_file(tmp_path):
    from distributed import LocalCluster

    named = tmp_path / "scheduler.json"
    with (
        LocalCluster(
            n_workers=1, dashboard_address=":0", scheduler_kwargs={"scheduler_file": str(named)}
        ) as local,
        cluster.connect(scheduler_file=str(named)) as client,
    ):
        assert client.scheduler.address == local.scheduler_address
    missing = tmp_path / "none.json"
    with pytest.raises(ParameterError, match=f"--scheduler-file {missing}: no scheduler's"):
        with cluster.connect(scheduler_file=str(missing)):
            pass


@pytest.mark.parametrize(
    "gpus, options, words",
    [
        ("0,,1", {}, "--gpus '0,,1': '' is no device; accepted: comma-separated distinct"),
        ("0,1,0", {}, "--gpus '0,1,0': '0' is listed twice"),
        ("0,1", {"workers": 3}, "--workers 3 with 2 GPUs in --gpus: each local worker needs"),
        ("0", {"scheduler": "tcp://h:1"}, "--gpus gives a local cluster's workers their GPUs"),
        ("", {"scheduler": "tcp://h:1", "scheduler_file": "f"}, "both name a cluster"),
        ("", {"workers": 2, "scheduler_file": "f"}, "with --scheduler-file the cluster's own"),
    ],
)
def test_cluster_options_that_do_not_go_together_give_one_line(gpus, options, words):
    with pytest.raises(ParameterError, match=words.replace("(", r"\(")):
        arguments = {"workers": None, "scheduler": None, "scheduler_file": None, **options}
        cluster.check_cluster(**arguments, gpus=cluster.parse_gpus(gpus) if gpus else None)
