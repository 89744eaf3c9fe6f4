"""Atomic publish for dbt (``publish: atomic``): a whole invocation lands as one snapshot.

In an atomic invocation every connection of the invocation works on a runtime over a private
branch of the lake (:class:`~.lake.branch.Branch`, opened on first use): models, seeds,
snapshots, tests, hooks and ``run_query`` read their own staged writes there, and nobody else
sees them. At the end the gate publishes the branch as one snapshot, or discards it.

When is the end, and did it pass? dbt decides a test's failure itself, from the rows the
adapter returned, so the adapter cannot see it. The gate listens to dbt's event stream
(a callback on dbt's event manager, added when the branch opens; dbt resets the callbacks at
each invocation's start): every ``NodeFinished`` and hook end line whose status is an error,
a failure, a runtime error or a skip (a node skipped because something upstream failed)
closes the gate, and so do dbt's "operation failed" and "encountered an error" events.
A run-like command (``build``, ``run``, ``seed``, ``snapshot``, ``test``) publishes at
``EndRunResult``, which dbt fires once every node and the on-run-end hooks are done and
before its summary, so that a failed publish ends the command with its error rather than
after "Completed successfully"; other commands (``run-operation``) at ``CommandCompleted``,
which dbt fires last, in a ``finally`` of every command (also after Ctrl-C or a crash, with
``success`` false). Either publishes only if dbt reports success too.
Anything else (a process that dies, an invocation that never completes) publishes nothing:
the branch is discarded by the next invocation, at the process's exit, or as a stale branch
(:func:`~.lake.branch.remove_stale`).
"""

from __future__ import annotations

import atexit
import getpass
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from .__version__ import version as adapter_version
from .credentials import DuckLakeCredentials, check_publish_mode
from .lake.secrets import redact
from .runtime import Runtime, _invocation, branch_runtime, runtime_for

logger = AdapterLogger("DuckLake")

ENV_VAR = "DUCKLAKE_PUBLISH"
# dbt commands that write nothing of their own: they read the lake as it is, without a branch
READ_ONLY_COMMANDS = frozenset({"compile", "show", "list", "ls", "parse", "debug", "generate",
                                "serve", "freshness", "deps", "clean", "init"})
# node statuses that must not be published (warn, pass, success and no-op are fine)
FAILED = frozenset({"error", "fail", "runtime error", "skipped", "partial success"})
# dbt events that say an invocation went wrong without a node status
ERROR_EVENTS = {"RunningOperationCaughtError": "the operation failed",
                "RunningOperationUncaughtError": "the operation failed",
                "MainEncounteredError": "dbt encountered an error",
                "MainKeyboardInterrupt": "the run was interrupted"}


# how a failed publish's error starts, on the last line dbt prints
NOT_PUBLISHED = "NOT PUBLISHED:"


def publish_mode(credentials: DuckLakeCredentials) -> str:
    """``per_model`` or ``atomic``: the environment variable ``DUCKLAKE_PUBLISH`` if set (for
    one invocation), else the profile's ``publish`` key."""
    value = os.environ.get(ENV_VAR, "")
    if value.strip():
        return check_publish_mode(value, f"the environment variable {ENV_VAR}")
    return check_publish_mode(credentials.publish, "the profile's publish key")


@dataclass
class Gate:
    """One atomic invocation: its branch, the runtime over it (none in unit tests), and
    what went wrong in it."""

    invocation_id: str
    command: str | None
    branch: Any  # lake.branch.Branch
    author: str
    runtime: Runtime | None = None
    problems: list[str] = field(default_factory=list)
    finished: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _forget_views(self) -> None:
        """The branch's temp views (its session's) go with it."""
        if self.runtime is not None:
            self.runtime.registry.invalidate()

    def on_event(self, msg: Any) -> None:
        """dbt's event callback: record failures; publish or discard on ``CommandCompleted``."""
        info = getattr(msg, "info", None)
        if info is None or getattr(info, "invocation_id", self.invocation_id) != \
                self.invocation_id:
            return
        name, data = info.name, msg.data
        if name == "NodeFinished":
            node = data.node_info
            self._status(node.unique_id, data.run_result.status, node.resource_type)
        elif name == "LogHookEndLine":
            self._status(data.node_info.unique_id or "a hook", data.status, "hook")
        elif name in ERROR_EVENTS:
            self._problem(ERROR_EVENTS[name])
        elif name == "EndRunResult":
            # a run-like command's end, after its nodes and on-run-end hooks, before dbt's
            # summary: a publish that fails here ends the command with its error instead of
            # "Completed successfully" (raised from dbt's fire_event, in the task)
            self.finish(bool(data.success), "dbt reported the run as failed", in_task=True)
        elif name == "CommandCompleted":
            self.finish(bool(data.success), "dbt reported the command as failed")

    def _status(self, node: str, status: str, resource_type: str) -> None:
        status = (status or "").lower()
        if status in FAILED and not (status == "skipped" and resource_type == "exposure"):
            self._problem(f"{node} ended with status {status}")

    def _problem(self, reason: str) -> None:
        with self.lock:
            if reason not in self.problems:
                self.problems.append(reason)

    def finish(self, success: bool, failure: str, in_task: bool = False) -> None:
        """Publish the branch as one snapshot if dbt reported success and no node failed;
        otherwise discard it (``failure`` says why when nothing else does). Says which in
        dbt's log; a failed publish fails the command (``in_task``: raised inside dbt's
        task, which dbt reports as the command's error)."""
        with self.lock:
            if self.finished:
                return
            self.finished = True
            reasons = list(self.problems)
        _forget(self)
        if not success and not reasons:
            reasons.append(failure)
        if reasons:
            self.discard(reasons)
            return
        self.publish(in_task)

    def discard(self, reasons: list[str]) -> None:
        shown = "; ".join(reasons[:5]) + (f"; and {len(reasons) - 5} more"
                                          if len(reasons) > 5 else "")
        try:
            self.branch.discard()
        finally:
            self._forget_views()
            logger.warning(f"Atomic publish: nothing published, the lake is as it was "
                           f"(snapshot {self.branch.base.snapshot_id}): {shown}")

    def publish(self, in_task: bool = False) -> None:
        base = self.branch.base.snapshot_id
        nodes = published_nodes(self.branch.catalog, base)
        message = (f"dbt {self.command or 'run'}: atomic publish of {len(nodes)} node(s) "
                   f"(invocation {self.invocation_id})")
        extra = commit_extra_info(self.invocation_id, self.command, base, nodes)
        try:
            snapshot = self.branch.publish(author=self.author, commit_message=message,
                                           commit_extra_info=extra)
        except Exception as exc:  # noqa: BLE001 - a conflict, a lost catalog, a full disk
            text = redact(str(exc)) or type(exc).__name__
            logger.error(f"Atomic publish failed, nothing published: {text}")
            error = DbtRuntimeError(f"{NOT_PUBLISHED} atomic publish failed, nothing was "
                                    f"published; the run did not take effect: {text}")
            raise (error if in_task else _command_error(error)) from exc
        finally:
            self._forget_views()
        if snapshot is None:
            logger.info(f"Atomic publish: nothing to publish, the invocation changed nothing "
                        f"(lake at snapshot {base})")
        else:
            logger.info(f"Atomic publish: published snapshot {snapshot.snapshot_id} "
                        f"({len(nodes)} node(s): {', '.join(nodes) or 'none'})")


def _command_error(exc: DbtRuntimeError) -> BaseException:
    """``exc`` as dbt's CLI reports an error of the command (exit code 2, dbtRunner's result
    not successful): raised from the callback of dbt's last event."""
    try:
        from dbt.cli.exceptions import ExceptionExit

        return ExceptionExit(exc)
    except ImportError:  # pragma: no cover - dbt-core without its CLI
        return exc


def published_nodes(catalog: Any, base: int) -> list[str]:
    """The dbt nodes whose statements committed on the branch since ``base``, sorted: unique
    ids (``model.shop.orders``), not dbt's own connections (``create__shop``, ``master``)."""
    nodes = set()
    for snapshot in catalog.snapshots(since=base):
        try:
            extra = json.loads(snapshot.commit_extra_info or "{}")
        except ValueError:
            continue
        node = extra.get("node_unique_id") if isinstance(extra, dict) else None
        if node and "." in str(node):
            nodes.add(str(node))
    return sorted(nodes)


def commit_extra_info(invocation_id: str, command: str | None, base: int,
                      nodes: list[str]) -> dict[str, Any]:
    """What the published snapshot records: the invocation (for ``snapshot -> dbt run``
    lineage), the snapshot the branch started from and the nodes it publishes."""
    dbt_version: str | None
    try:
        from dbt.version import __version__ as dbt_version
    except Exception:  # noqa: BLE001
        dbt_version = None
    return {"invocation_id": invocation_id, "command": command, "dbt_version": dbt_version,
            "adapter": "dbt-ducklake", "adapter_version": adapter_version,
            "statement": "ATOMIC PUBLISH", "publish": "atomic", "base_snapshot": base,
            "nodes": nodes}


_gates: dict[tuple[int, str], Gate] = {}
_finished: set[str] = set()  # invocation ids whose gate published or discarded
_gates_lock = threading.Lock()


def current_runtime(credentials: DuckLakeCredentials) -> Runtime:
    """The runtime a connection of this invocation works on: the profile's own, or in an
    atomic invocation of a writing command, the runtime over the invocation's branch."""
    base = runtime_for(credentials)
    invocation_id, command = _invocation()
    _finish_stale(invocation_id)
    if publish_mode(credentials) != "atomic" or base.registry.pinned_version is not None:
        return base  # a pinned profile writes nothing: nothing to stage
    if invocation_id is None or command in READ_ONLY_COMMANDS or not _in_command():
        return base  # outside a dbt command (the Python API, a test's fixture), or a read
    key = (id(base), invocation_id)
    with _gates_lock:
        if invocation_id in _finished:
            return base  # after the command's end: a test harness's own statements
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = _open(base, invocation_id, command)
    if gate.finished or gate.runtime is None:
        raise DbtRuntimeError(
            f"the atomic invocation {invocation_id} has already published or discarded its "
            "branch; nothing more can be written in it")
    return gate.runtime


def _finish_stale(invocation_id: str | None) -> None:
    """Discard the branches of earlier invocations that never completed (no
    ``CommandCompleted``: dbt's task called without its CLI, or an error before it)."""
    with _gates_lock:
        stale = [g for k, g in _gates.items() if k[1] != invocation_id]
    for old in stale:
        old.finish(False, f"its invocation ({old.invocation_id}) never completed")


def _in_command() -> bool:
    """Whether this thread works for a dbt command: dbt's CLI (and dbtRunner) runs a command
    inside a click context, visible in the thread that invoked it; dbt's node threads cannot
    see it, but run only inside a command. The main thread without one is a harness's own
    statement (dbt-tests-adapter's fixtures: dbt's flags then still say ``run``)."""
    import click

    if click.get_current_context(silent=True) is not None:
        return True
    return threading.current_thread() is not threading.main_thread()


def _open(base: Runtime, invocation_id: str, command: str | None) -> Gate:
    from dbt_common.events.event_manager_client import add_callback_to_manager

    from .lake.branch import Branch, remove_stale

    try:
        dropped = remove_stale(base.lake.catalog)  # branches of killed processes
    except Exception as exc:  # noqa: BLE001 - a leftover copy must not stop a build
        logger.warning(f"Atomic publish: could not look for stale branches: {redact(str(exc))}")
    else:
        if dropped:
            logger.info(f"Atomic publish: dropped {len(dropped)} branch(es) left by processes "
                        "that are gone")
    branch = Branch.open(base.lake.catalog, guard=f"the atomic dbt invocation {invocation_id}")
    try:
        gate = Gate(invocation_id, command, branch,
                    base.credentials.author or getpass.getuser(), branch_runtime(base, branch))
    except BaseException:
        branch.discard()
        raise
    add_callback_to_manager(gate.on_event)
    logger.info(f"Atomic publish: this invocation's writes are staged on a branch of "
                f"snapshot {branch.base.snapshot_id}; they are published as one snapshot "
                "at the end if no node fails")
    return gate


def _forget(gate: Gate) -> None:
    with _gates_lock:
        _finished.add(gate.invocation_id)
        for key in [k for k, g in _gates.items() if g is gate]:
            del _gates[key]


@atexit.register
def _discard_unfinished() -> None:
    """At the process's exit, an invocation that never completed publishes nothing."""
    with _gates_lock:
        gates = list(_gates.values())
    for gate in gates:
        try:
            gate.finish(False, "the process exited before its invocation completed")
        except Exception:  # noqa: BLE001, S110 - exiting: the branch is stale, not lost
            pass
