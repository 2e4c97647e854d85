"""The benchmark's delivery batches: consecutive hours, every file once (no Spark)."""

from __future__ import annotations

import pytest

from pipelines.bench import _slope, delivery_batches


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
