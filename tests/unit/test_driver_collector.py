"""The garbage collector of a driver JVM the adapter starts: the parallel collector, unless
the profile or the JVM's environment already chose one (two would stop the JVM)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.runtime import DRIVER_COLLECTOR, with_collector

JAVA = "spark.driver.extraJavaOptions"


@pytest.fixture(autouse=True)
def no_java_environment(monkeypatch) -> None:  # noqa: ANN001
    for name in ("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"):
        monkeypatch.delenv(name, raising=False)


def test_the_parallel_collector_is_added_to_the_profiles_options() -> None:
    assert with_collector({}) == {JAVA: DRIVER_COLLECTOR}
    conf = {JAVA: "-Dx=1", "spark.sql.shuffle.partitions": "4"}
    assert with_collector(conf) == {JAVA: f"-Dx=1 {DRIVER_COLLECTOR}",
                                    "spark.sql.shuffle.partitions": "4"}
    assert conf[JAVA] == "-Dx=1"  # the profile's settings are not changed in place


@pytest.mark.parametrize("conf", [
    {JAVA: "-Xss4m -XX:+UseG1GC"},
    {JAVA: "-XX:+UseSerialGC"},
    {"spark.driver.defaultJavaOptions": "-XX:+UseZGC"},
])
def test_a_collector_the_profile_chose_is_kept(conf: dict[str, str]) -> None:
    assert with_collector(conf) == conf


def test_a_collector_the_environment_chose_is_kept(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseShenandoahGC")
    assert with_collector({JAVA: "-Dx=1"}) == {JAVA: "-Dx=1"}


def test_other_use_flags_are_not_collectors() -> None:
    assert with_collector({JAVA: "-XX:+UseCompressedOops"}) == {
        JAVA: f"-XX:+UseCompressedOops {DRIVER_COLLECTOR}"}
