"""Atomic publish's gate: the publish mode (profile key, environment variable, clear errors),
and the decision to publish or discard a branch from dbt's own events, on a real branch of a
real SQLite catalog (no Spark: the gate is told only what dbt fires)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from dbt.events.types import CommandCompleted, EndRunResult, LogHookEndLine, NodeFinished
from dbt_common.events.base_types import msg_from_base_event
from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id, reset_invocation_id

from dbt.adapters.ducklake.credentials import DuckLakeCredentials
from dbt.adapters.ducklake.lake import Catalog, tables
from dbt.adapters.ducklake.lake.branch import Branch
from dbt.adapters.ducklake.lake.commit import Transaction
from dbt.adapters.ducklake.lake.errors import CommitConflictError
from dbt.adapters.ducklake.publish_gate import Gate, publish_mode


def make(**extra: Any) -> DuckLakeCredentials:
    return DuckLakeCredentials.from_dict({"schema": "analytics", **extra})


# ---------------------------------------------------------------------------------- the mode
def test_per_model_is_the_default(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("DUCKLAKE_PUBLISH", raising=False)
    assert make().publish == "per_model" and publish_mode(make()) == "per_model"
    assert publish_mode(make(publish=" Atomic ")) == "atomic"


def test_the_environment_variable_overrides_the_profile(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("DUCKLAKE_PUBLISH", "atomic")
    assert publish_mode(make(publish="per_model")) == "atomic"
    monkeypatch.setenv("DUCKLAKE_PUBLISH", "per_model")
    assert publish_mode(make(publish="atomic")) == "per_model"
    monkeypatch.setenv("DUCKLAKE_PUBLISH", "  ")  # blank: the profile decides
    assert publish_mode(make(publish="atomic")) == "atomic"


def test_unknown_modes_list_the_accepted_ones(monkeypatch) -> None:  # noqa: ANN001
    with pytest.raises(DbtRuntimeError, match=r"the profile's publish key is 'all'; "
                                              r"accepted: per_model, atomic"):
        make(publish="all")
    monkeypatch.setenv("DUCKLAKE_PUBLISH", "yes")
    with pytest.raises(DbtRuntimeError, match=r"the environment variable DUCKLAKE_PUBLISH is "
                                              r"'yes'; accepted: per_model, atomic"):
        publish_mode(make())


# ---------------------------------------------------------------------------------- the gate
@pytest.fixture
def lake(tmp_path) -> Iterator[Catalog]:  # noqa: ANN001
    catalog = Catalog.open(f"sqlite:///{tmp_path}/catalog.sqlite", f"{tmp_path}/data/")
    yield catalog
    catalog.close()


def gate_with_writes(lake: Catalog, *nodes: str) -> Gate:
    """A gate over a real branch of ``lake`` on which each node created a schema."""
    reset_invocation_id()
    branch = Branch.open(lake)
    for node in nodes:
        tx = Transaction(branch.catalog)
        tables.create_schema(tx, node.split(".")[-1], False)
        tx.commit("dbt", f"dbt run: {node}", {"node_unique_id": node})
    return Gate(get_invocation_id(), "build", branch, "tester")


def node(unique_id: str, status: str, resource_type: str = "model") -> Any:
    return msg_from_base_event(NodeFinished(
        node_info={"unique_id": unique_id, "resource_type": resource_type},
        run_result={"status": status}))


def completed(success: bool) -> Any:
    return msg_from_base_event(CommandCompleted(command="dbt build", success=success,
                                                completed_at=None, elapsed=1.0))


def test_a_passing_invocation_publishes_one_snapshot(lake: Catalog) -> None:
    before = lake.latest_snapshot().snapshot_id
    gate = gate_with_writes(lake, "model.p.a", "seed.p.b", "create__c")
    for msg in (node("seed.p.b", "success", "seed"), node("model.p.a", "success"),
                node("test.p.t", "warn", "test"), node("test.p.u", "pass", "test"),
                node("exposure.p.x", "skipped", "exposure"), completed(True)):
        gate.on_event(msg)
    published = lake.snapshots(since=before)
    assert len(published) == 1 and gate.branch.closed
    extra = json.loads(published[0].commit_extra_info)
    assert extra["invocation_id"] == gate.invocation_id and extra["base_snapshot"] == before
    assert extra["nodes"] == ["model.p.a", "seed.p.b"]
    assert published[0].commit_message == (
        f"dbt build: atomic publish of 2 node(s) (invocation {gate.invocation_id})")
    assert published[0].author == "tester"
    assert {s.schema_name for s in lake.schemas()} >= {"a", "b", "create__c"}


def hook_error() -> Any:
    return msg_from_base_event(LogHookEndLine(
        node_info={"unique_id": "operation.p.end"}, statement="", status="error", index=1,
        total=1, execution_time=0.1))


# events are made once the gate's invocation has begun: they carry its invocation id
@pytest.mark.parametrize("events", [
    lambda: [node("model.p.a", "success"), node("test.p.t", "fail", "test"), completed(False)],
    lambda: [node("model.p.a", "error"), node("model.p.b", "skipped"), completed(False)],
    lambda: [node("model.p.a", "success"), completed(False)],  # Ctrl-C, a crash
    # a failed node is enough, whatever dbt's summary says
    lambda: [node("model.p.a", "runtime error"), completed(True)],
    lambda: [hook_error(), completed(True)],
], ids=["test fails", "model error", "command failed", "runtime error", "hook error"])
def test_a_failed_invocation_publishes_nothing(lake: Catalog, events: Any) -> None:
    before = lake.latest_snapshot().snapshot_id
    gate = gate_with_writes(lake, "model.p.a")
    for msg in events():
        gate.on_event(msg)
    assert gate.branch.closed and gate.finished
    assert lake.latest_snapshot().snapshot_id == before
    assert "a" not in {s.schema_name for s in lake.schemas()}


def test_events_of_another_invocation_are_not_this_ones(lake: Catalog) -> None:
    gate = gate_with_writes(lake, "model.p.a")
    reset_invocation_id()  # the next invocation in the same process
    gate.on_event(node("model.p.a", "error"))
    gate.on_event(completed(True))
    assert not gate.finished and not gate.branch.closed
    gate.finish(False, "never completed")
    assert gate.branch.closed


def run_ended(success: bool) -> Any:
    return msg_from_base_event(EndRunResult(results=[], generated_at="2026-11-29T00:00:00Z",
                                            elapsed_time=1.0, success=success))


def test_a_run_publishes_before_dbt_summary_and_a_failed_publish_fails_the_task(
        lake: Catalog, monkeypatch) -> None:  # noqa: ANN001
    """A run-like command publishes at ``EndRunResult`` (before dbt's "Completed
    successfully"); ``CommandCompleted`` then has nothing left to do. A publish that fails
    there raises dbt's own error type inside the task, saying NOT PUBLISHED."""
    before = lake.latest_snapshot().snapshot_id
    gate = gate_with_writes(lake, "model.p.a")
    gate.on_event(node("model.p.a", "success"))
    gate.on_event(run_ended(True))
    assert gate.finished and len(lake.snapshots(since=before)) == 1
    gate.on_event(completed(True))
    assert len(lake.snapshots(since=before)) == 1

    gate = gate_with_writes(lake, "model.p.b")

    def conflict(*args: Any, **kwargs: Any) -> None:
        raise CommitConflictError("cannot publish the branch: table main.t was changed by "
                                  "snapshot 7")

    monkeypatch.setattr(gate.branch, "publish", conflict)
    with pytest.raises(DbtRuntimeError, match=r"(?m)^ *NOT PUBLISHED: .*main\.t .*snapshot 7"):
        gate.on_event(run_ended(True))
    gate.on_event(completed(False))  # dbt's finally: nothing more
    gate.branch.discard()
