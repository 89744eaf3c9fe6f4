"""A lake's session ships its Hadoop configuration to every job without the resource names of
its properties (:mod:`dbt.adapters.ducklake.spark.hadoop_conf`): every property and value is
still there, on the driver and in what a task reads back."""

from __future__ import annotations

import threading

import pytest
from spies import counted

from dbt.adapters.ducklake.spark import hadoop_conf

pytestmark = pytest.mark.spark


def properties(conf) -> dict[str, str]:  # noqa: ANN001 - a JVM Configuration
    out = {}
    entries = conf.iterator()
    while entries.hasNext():
        entry = entries.next()
        out[entry.getKey()] = entry.getValue()
    return out


def shipped(spark, conf):  # noqa: ANN001, ANN201 - what a task gets: Configuration.readFields
    jvm = spark.sparkContext._jvm
    buffer = jvm.java.io.ByteArrayOutputStream()
    conf.write(jvm.java.io.DataOutputStream(buffer))
    copy = jvm.org.apache.hadoop.conf.Configuration(False)
    copy.readFields(jvm.java.io.DataInputStream(
        jvm.java.io.ByteArrayInputStream(buffer.toByteArray())))
    return copy, buffer.size()


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_jobs_get_every_property_without_resource_names(spark, lake) -> None:  # noqa: ANN001
    """After a lake is opened, a session's Hadoop configuration holds every property, with its
    value, of the one Spark makes from Hadoop's resources (core, MapReduce, YARN defaults) and
    the application's settings, names no resource, and a task reads back exactly its
    properties."""
    jvm = spark.sparkContext._jvm
    lake.create_table("main.t", spark.range(5))  # a write, as the first job of a session
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    ours = properties(conf)
    fresh = jvm.org.apache.spark.deploy.SparkHadoopUtil.get().newConfiguration(
        spark.sparkContext._jsc.sc().conf())  # what Spark starts from, names and all
    expected = properties(fresh)
    assert len(expected) > 1000
    assert {key: ours.get(key) for key in expected} == expected
    assert fresh.getPropertySources("io.file.buffer.size") is not None
    assert all(conf.getPropertySources(key) is None for key in expected)
    copy, size = shipped(spark, conf)
    assert properties(copy) == ours
    # with the names, the same properties take half as much again
    assert size * 1.4 < shipped(spark, fresh)[1]
    assert sorted(r.id for r in lake.table("main.t").read().collect()) == list(range(5))


@pytest.mark.parametrize("lake_target", ["sqlite"], indirect=True)
def test_names_a_new_default_resource_brings_back_are_forgotten_again(spark, lake) -> None:  # noqa: ANN001
    """A default resource added later makes Hadoop read every configuration again, names and
    all; forgetting them again leaves the properties as they were."""
    context = spark.sparkContext._jsc.hadoopConfiguration()
    before = properties(context)
    context.reloadConfiguration()  # what Configuration.addDefaultResource does to each
    assert context.getPropertySources("io.file.buffer.size") is not None
    client = spark.sparkContext._gateway._gateway_client
    send, ours = client.send_command, threading.current_thread()
    calls = counted(lambda: None)

    def counting(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if threading.current_thread() is ours:  # not py4j's releases of collected proxies
            calls()
        return send(*args, **kwargs)

    client.send_command = counting
    try:
        assert hadoop_conf.forget_sources(spark) > 1000
        # a few calls, not four for each of the 1,100 properties
        assert calls.calls < 40
    finally:
        client.send_command = send
    assert context.getPropertySources("io.file.buffer.size") is None
    assert properties(context) == before
    assert hadoop_conf.forget_sources(spark) == 0
