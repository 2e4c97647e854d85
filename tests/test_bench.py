"""The benchmark's delivery batches: consecutive hours, every file once (no Spark)."""

from __future__ import annotations

import pytest

from devtools.bench import _slope, delivery_batches


def test_delivery_batches_cut_consecutive_hours_and_keep_every_file(tmp_path):
    files = []
    for day in ("01", "02"):
        for hour in ("00", "05", "23"):
            for kind in ("site/siteLuid=a", "tenant/tenantId=t"):
                path = tmp_path / kind / f"y=2026/m=06/d={day}/h={hour}/eventType=x/part-00000.json"
                path.parent.mkdir(parents=True)
                path.write_text("{}\n")
                files.append(path)
    batches = delivery_batches(tmp_path, 3)
    assert [len(b) for b in batches] == [4, 4, 4]
    assert sorted(p for b in batches for p in b) == sorted(files)
    hours = [sorted({p.as_posix().split("/d=")[1][:7] for p in b}) for b in batches]
    assert hours == [["01/h=00", "01/h=05"], ["01/h=23", "02/h=00"], ["02/h=05", "02/h=23"]]
    with pytest.raises(ValueError, match="6 hours of activity cannot make 7 batches"):
        delivery_batches(tmp_path, 7)


def test_slope_is_seconds_per_event_of_history():
    assert _slope([100, 200, 300], [10.0, 10.0, 10.0]) == 0.0
    assert _slope([100, 200, 300], [10.0, 20.0, 30.0]) == pytest.approx(0.1)


def test_the_all_layers_report_gives_gold_growth_and_dbt_nodes_side_by_side():
    from devtools.bench import _all_figures, render_all
    from pipelines.config import load_config

    def batch(n: int, history: int, gold: float, nodes) -> dict:
        return {"batch": n, "files": 1, "rows_in": 10, "rows_out": 10, "history": history,
                "seconds": {"bronze": 1.0, "silver": 2.0, "gold": gold}, "total_s": 3.0 + gold, "dbt_nodes": nodes}

    rows = [batch(1, 100_000, 40.0, []),
            batch(2, 200_000, 20.0, [("dim_users", "model", 4.0), ("primary_key_fct_logins_event_id.1", "test", 1.0)]),
            batch(3, 300_000, 21.0, [("dim_users", "model", 5.0), ("primary_key_fct_logins_event_id.1", "test", 0.5)])]
    text = render_all(_all_figures(1000, {"files": 3, "bytes": 1e6}, 3, rows), load_config("test"))
    assert "(gold alone: +1.0 s)" in text
    assert "| `dim_users` | 4.0 | 5.0 |" in text
    assert "batch 3: models 5.0 s, tests 0.5 s" in text


def test_the_refresh_report_compares_the_delivery_with_the_faster_idle_run_and_says_where_time_went():
    from devtools.bench_refresh import _gaps, render_refresh
    from pipelines.config import load_config

    lines = [(5.0, "refresh r1: layers bronze, silver, gold"), (6.0, "WARNING: Using incubator modules"),
             (40.0, "silver: site: gate passed"), (42.0, "feed: 3 hours updated"),
             (140.0, "gold: 105 pass, 39 success in 98.0s"), (150.0, "refresh r1 done: bronze 9.0s, silver 30.0s")]
    assert _gaps(lines, top=2) == [(98.0, "gold: 105 pass, 39 success in 98.0s"), (35.0, "silver: site: gate passed")]

    def run(label: str, wall: float) -> dict:
        return {"label": label, "wall_s": wall, "layers": {"bronze": 1.0, "silver": 2.0, "gold": 3.0}, "lines": lines}

    delivered = run("+400 events", 150.0)
    delivered["dbt"] = {"elapsed_s": 98.0, "kinds": {"model": (39, 300.0), "test": (105, 200.0)},
                        "slowest": [(17.5, "model", "rpt_feed_gaps")]}
    fig = {"events": 20_000, "delivery": 400,
           "runs": [run("first load", 400.0), run("nothing new", 60.0), delivered, run("nothing new, again", 50.0)]}
    fig["warm"] = [("nothing new (the process's first run)", 25.0), ("+400 events", 80.0)]
    text = render_refresh(fig, load_config("test"))
    assert "**3.0x**" in text  # 150 / min(60, 50)
    assert "| +400 events | **80.0** |" in text  # the same run in a warm `refresh --every` process
    assert "- 98.0 s: `gold: 105 pass, 39 success in 98.0s`" in text
    assert "39 models 300 thread-s, 105 tests 200 thread-s" in text
    assert "| +400 events | **150.0** | 1.0 | 2.0 | 3.0 |" in text
