"""Paths and names from catalog rows are not trusted (no JVM): where a path may point, and
which inlined-table names may go into SQL."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake.catalog import checked_inlined_table
from dbt.adapters.ducklake.lake.errors import UnsafeCatalogNameError, UnsafePathError
from dbt.adapters.ducklake.lake.files import delete_refusal, list_files, remove_inside
from dbt.adapters.ducklake.lake.paths import (
    check_dir,
    check_file,
    outside_reason,
    relative_to,
    scheduled_form,
)

DATA = "/lake/data/"


@pytest.mark.parametrize("path", [
    "/lake/data/main/t/ducklake-1.parquet",
    "file:///lake/data/main/t/ducklake-1.parquet",
    "file:/lake/data/main/t/ducklake-1.parquet",
    "/lake/data/main/t/../u/ducklake-1.parquet",  # normalised: still inside
    "/lake//data/./main/ducklake-1.parquet",
])
def test_paths_inside_the_data_path(path: str) -> None:
    assert outside_reason([DATA], path) is None


@pytest.mark.parametrize(("path", "why"), [
    ("/lake/data/main/../../secret.parquet", "outside the data path"),
    ("/lake/data-other/x.parquet", "outside the data path"),  # a string prefix, not a parent
    ("/etc/passwd", "outside the data path"),
    ("/lake/data/", "outside the data path"),  # the data path itself is no file
    ("/lake/data/main/t/notes.txt", "not a .parquet file"),
    ("main/t/x.parquet", "neither an absolute path"),
    ("file://host/lake/data/x.parquet", "neither an absolute path"),
    ("s3://bucket/lake/data/x.parquet", "another file system or bucket"),
    ("/lake/data/main\\..\\..\\..\\x.parquet", "outside the data path"),
])
def test_paths_refused_for_the_local_data_path(path: str, why: str) -> None:
    reason = outside_reason([DATA], path)
    assert reason is not None and why in reason, reason


def test_object_store_paths_compare_bucket_and_components() -> None:
    root = "s3a://bucket/lake/"
    assert outside_reason([root], "s3://bucket/lake/main/t/x.parquet") is None  # s3 = s3a
    for path in ("s3://other/lake/main/x.parquet", "gs://bucket/lake/x.parquet",
                 "s3://bucket/lake-2/x.parquet", "s3://bucket/lake/../other/x.parquet",
                 "s3://bucket/lake/./x.parquet", "/lake/x.parquet"):
        assert outside_reason([root], path) is not None, path
    assert relative_to(root, "s3://bucket/lake/main/t/x.parquet") == "main/t/x.parquet"
    assert relative_to(root, "s3://other/lake/main/t/x.parquet") is None


def test_scheduled_rows_are_relative_only_below_the_data_path() -> None:
    assert scheduled_form(DATA, "/lake/data/main/t/x.parquet") == ("main/t/x.parquet", True)
    assert scheduled_form(DATA, "/lake/data-other/x.parquet") == \
        ("/lake/data-other/x.parquet", False)
    assert scheduled_form(DATA, "/lake/data/main/t/../../../x.parquet") == \
        ("/lake/data/main/t/../../../x.parquet", False)


def test_catalog_file_rows_are_checked_with_the_message_naming_the_row() -> None:
    check_file([DATA], "ducklake-1.parquet", True, "ducklake_data_file 7")
    check_file([DATA], "region=eu/ducklake-1.parquet", True, "ducklake_data_file 7")
    check_file([DATA, "/added/"], "/added/f.parquet", False, "ducklake_data_file 7")
    for path, relative in [("../../../etc/x.parquet", True), ("/etc/x.parquet", True),
                           ("s3://b/x.parquet", True), ("a/..\\..\\x.parquet", True),
                           ("notes.txt", True), ("/etc/x.parquet", False),
                           ("s3://b/x.parquet", False), ("/lake/data/x.csv", False)]:
        with pytest.raises(UnsafePathError, match="ducklake_data_file 7 has path"):
            check_file([DATA], path, relative, "ducklake_data_file 7")


def test_table_directories_stay_inside_the_data_path() -> None:
    check_dir(DATA, DATA + "main/", "t/", True, "table main.t")
    check_dir(DATA, DATA, "", True, "schema main")
    check_dir(DATA, DATA + "main/", "/lake/data/elsewhere/t/", False, "table main.t")
    for path, relative in [("../../../home/", True), ("/home/x/", False),
                           ("s3://b/t/", False)]:
        with pytest.raises(UnsafePathError, match="table main.t has path"):
            check_dir(DATA, DATA + "main/", path, relative, "table main.t")


@pytest.mark.parametrize("name", [
    'ducklake_inlined_data_1_2; DROP TABLE ducklake_snapshot; --',
    'ducklake_inlined_data_1_2"',
    "ducklake_snapshot",
    "ducklake_inlined_data_1_3",  # another schema version's name
    "DUCKLAKE_INLINED_DATA_1_2",
])
def test_inlined_table_names_must_be_exactly_duckdbs(name: str) -> None:
    assert checked_inlined_table(1, "ducklake_inlined_data_1_2", 2).table_name == \
        "ducklake_inlined_data_1_2"
    with pytest.raises(UnsafeCatalogNameError, match="ducklake_inlined_data_tables row"):
        checked_inlined_table(1, name, 2)
    with pytest.raises(UnsafeCatalogNameError):
        checked_inlined_table("1; --", "ducklake_inlined_data_1_2", 2)


def test_deletion_never_goes_through_links_or_out_of_the_data_path(tmp_path) -> None:  # noqa: ANN001
    data, outside = tmp_path / "data", tmp_path / "outside"
    (data / "main").mkdir(parents=True)
    outside.mkdir()
    victim = outside / "victim.parquet"
    victim.write_text("keep")
    (data / "main" / "link").symlink_to(outside, target_is_directory=True)
    (data / "main" / "file-link.parquet").symlink_to(victim)
    root = str(data) + "/"
    assert "symbolic link" in str(delete_refusal(root, str(data / "main/link/victim.parquet")))
    assert "symbolic link" in str(delete_refusal(root, str(data / "main/file-link.parquet")))
    assert remove_inside(root, str(data / "main/link/victim.parquet")) is not None
    assert remove_inside(root, str(data / "main/file-link.parquet")) is not None
    assert remove_inside(root, str(data / "main/link/../../outside/victim.parquet")) \
        is not None
    assert victim.read_text() == "keep" and (data / "main" / "file-link.parquet").is_symlink()
    # the listing neither follows the directory link nor lists the file link
    assert list_files(root) == []
    ours = data / "main" / "ducklake-x.parquet"
    ours.write_text("x")
    assert [p for p, _ in list_files(root)] == [str(ours)]
    assert remove_inside(root, str(ours)) is None and not ours.exists()
