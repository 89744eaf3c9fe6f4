"""A lake's JVM sets local files' modes through java.nio, not a ``chmod`` process each
(:mod:`dbt.adapters.ducklake.spark.local_file_system`), with the modes Hadoop's own would set."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dbt.adapters.ducklake.spark import jvm_classes
from dbt.adapters.ducklake.spark import local_file_system as local

pytestmark = pytest.mark.spark


def raw_file_system(spark):  # noqa: ANN001, ANN201 - a JVM RawLocalFileSystem
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return jvm.org.apache.hadoop.fs.FileSystem.getLocal(conf).getRawFileSystem()


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_opening_a_lake_sets_local_modes_in_the_jvm_as_hadoop_would(spark, lake, tmp_path) -> None:  # noqa: ANN001
    """Opening a lake installs the file system under the JVM's cached local one; a write's
    files and directories get the modes Hadoop's RawLocalFileSystem gives them."""
    assert raw_file_system(spark).getClass().getName() == local.CLASS_NAME
    spark.range(10).coalesce(1).write.parquet(str(tmp_path / "ours"))
    jvm = spark.sparkContext._jvm
    hadoops = jvm.org.apache.hadoop.fs.RawLocalFileSystem()
    hadoops.initialize(jvm.java.net.URI("file:///"), spark.sparkContext._jsc.hadoopConfiguration())
    theirs = jvm.org.apache.hadoop.fs.Path(str(tmp_path / "theirs" / "d" / "f"))
    hadoops.create(theirs).close()
    ours = next((tmp_path / "ours").glob("part-*.parquet"))
    assert (mode(ours), mode(ours.parent)) == \
        (mode(tmp_path / "theirs" / "d" / "f"), mode(tmp_path / "theirs" / "d"))
    lake.create_table("main.t", spark.range(5))
    assert sorted(r.id for r in lake.table("main.t").read().collect()) == list(range(5))


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
@pytest.mark.parametrize("octal", [0o000, 0o640, 0o755, 0o777, 0o1777])
def test_modes_are_set_as_chmod_sets_them(spark, lake, tmp_path, octal: int) -> None:  # noqa: ANN001
    """Every permission bit lands where ``chmod`` puts it; a mode with the sticky bit goes
    through Hadoop's own ``chmod`` and lands too."""
    jvm = spark.sparkContext._jvm
    path = tmp_path / "d"
    path.mkdir()
    permission = jvm.org.apache.hadoop.fs.permission.FsPermission(octal)
    raw = raw_file_system(spark)
    assert raw.getClass().getName() == local.CLASS_NAME
    raw.setPermission(jvm.org.apache.hadoop.fs.Path(str(path)), permission)
    assert stat.S_IMODE(os.stat(path).st_mode) == octal
    path.chmod(0o755)


def test_a_local_file_system_that_is_not_hadoops_own_is_left_alone(spark, tmp_path) -> None:  # noqa: ANN001
    """A profile's ``fs.file.impl`` wins: the helper does not replace what it does not know."""
    helper = jvm_classes.instance(spark, Path(local.__file__).with_name(
        f"{local.CLASS_NAME}.java"), local.CLASS_NAME)
    jvm = spark.sparkContext._jvm
    conf = jvm.org.apache.hadoop.conf.Configuration(spark.sparkContext._jsc.hadoopConfiguration())
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
    conf.set("fs.file.impl.disable.cache", "true")
    assert helper.install(conf) is False
