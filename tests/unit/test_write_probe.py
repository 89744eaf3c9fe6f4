"""``dbt debug``'s check that the data path is writable writes nowhere else (no JVM)."""

from __future__ import annotations

import os


def test_write_probe_follows_no_link_and_is_not_predictable(tmp_path) -> None:  # noqa: ANN001
    from dbt.adapters.ducklake.runtime import check_data_path

    data, sentinel = tmp_path / "data", tmp_path / "sentinel"
    data.mkdir()
    sentinel.write_text("keep")
    planted = data / f".ducklake-write-check-{os.getpid()}"  # the name the probe used to take
    planted.symlink_to(sentinel)
    check_data_path(str(data))
    assert sentinel.read_text() == "keep" and planted.is_symlink()
    assert sorted(os.listdir(data)) == [planted.name]  # the probe removed its own file
