"""`dbt clone` on a lake: which snapshot a clone reads.

DuckLake has no zero-copy table clone (a data file belongs to one table, and expiring a table
lets cleanup delete its files), so a clone is a view over the state's relation, as dbt makes it
for every adapter without table clones. By default the view reads the relation as it is now.
With ``clone_snapshot`` set, it reads the relation at one snapshot instead (this adapter's
time-travel name, `` `schema.table@v42` ``), so a deferred CI run reads exactly the rows that
production had:

- ``state``: the snapshot the state manifest's run left the lake at, that is the last
  snapshot whose ``commit_extra_info`` carries the manifest's ``invocation_id`` (every commit
  dbt makes records its invocation); when that run committed nothing (a ``dbt compile``,
  ``dbt test`` or ``dbt docs generate`` manifest), the latest snapshot at or before the
  manifest's ``generated_at`` (when dbt parsed the project for that run).
- a snapshot id: that snapshot.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from typing import Any

from dbt_common.exceptions import DbtRuntimeError

from .lake.errors import DuckLakeError
from .runtime import Runtime

ACCEPTED = "'current' (or none: the relation as it is now), 'state', or a snapshot id"


@dataclass(frozen=True)
class ClonePin:
    """The snapshot clones read, and why."""

    snapshot_id: int
    reason: str


_pins: dict[tuple[int, str, float], ClonePin] = {}
_pins_lock = threading.Lock()


def parse_setting(value: Any) -> str | int | None:
    """``clone_snapshot`` as ``None`` (current), ``'state'`` or a snapshot id; anything else
    fails naming the accepted values."""
    if value is None or value is False or (isinstance(value, str) and
                                           value.strip().lower() in ("", "current", "none")):
        return None
    if isinstance(value, bool):
        raise DbtRuntimeError(f"clone_snapshot: got {value!r}; accepted: {ACCEPTED}")
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "state":
            return "state"
        if text.isdigit():
            return int(text)
    raise DbtRuntimeError(f"clone_snapshot: got {value!r}; accepted: {ACCEPTED}")


def state_manifest_path() -> str:
    """The manifest of ``--state`` (or ``--defer-state``) of this invocation."""
    try:
        from dbt.flags import get_flags

        flags = get_flags()
        state = getattr(flags, "DEFER_STATE", None) or getattr(flags, "STATE", None)
    except Exception:  # noqa: BLE001 - outside a dbt invocation
        state = None
    if not state:
        raise DbtRuntimeError(
            "clone_snapshot: 'state' pins clones to the run that wrote the state manifest, "
            "but this invocation has no --state (or --defer-state) directory")
    return os.path.join(str(state), "manifest.json")


def pin(runtime: Runtime, setting: str | int) -> ClonePin:
    """The snapshot a clone reads for a parsed ``clone_snapshot`` setting (not ``None``)."""
    lake = runtime.lake.catalog
    if isinstance(setting, int):
        try:
            return ClonePin(lake.snapshot(version=setting).snapshot_id, "clone_snapshot")
        except DuckLakeError as exc:
            raise DbtRuntimeError(f"clone_snapshot: {exc}") from exc
    path = state_manifest_path()
    try:
        key = (id(lake), os.path.realpath(path), os.stat(path).st_mtime)
    except OSError as exc:
        raise DbtRuntimeError(
            f"clone_snapshot: cannot read the state manifest {path}: {exc.strerror or exc}"
        ) from exc
    with _pins_lock:
        if key not in _pins:
            _pins[key] = _state_pin(runtime, path)
        return _pins[key]


def _state_pin(runtime: Runtime, path: str) -> ClonePin:
    with open(path, encoding="utf-8") as handle:
        metadata = json.load(handle).get("metadata") or {}
    invocation_id = metadata.get("invocation_id")
    generated_at = metadata.get("generated_at")
    lake = runtime.lake.catalog
    if invocation_id:
        # commit_extra_info is JSON written with sorted keys: the run's commits contain this
        # fragment, so the catalog finds them without reading the whole history
        fragment = json.dumps({"invocation_id": invocation_id})[1:-1]
        for snapshot in lake.snapshots_with_extra_info(fragment):  # newest first
            try:
                extra = json.loads(snapshot.commit_extra_info or "{}")
            except ValueError:
                continue
            if isinstance(extra, dict) and extra.get("invocation_id") == invocation_id:
                return ClonePin(snapshot.snapshot_id,
                                f"the last snapshot of invocation {invocation_id}, which "
                                "wrote the state manifest")
    if not generated_at:
        raise DbtRuntimeError(
            f"clone_snapshot: the state manifest {path} has neither an invocation that "
            "committed to this lake nor a generated_at time; pass a snapshot id instead")
    try:
        snapshot = lake.snapshot(timestamp=str(generated_at).replace("Z", "+00:00"))
    except DuckLakeError as exc:
        raise DbtRuntimeError(
            f"clone_snapshot: the state manifest was written at {generated_at} by invocation "
            f"{invocation_id}, which committed nothing to this lake, and no snapshot of it is "
            f"left for that time: {exc}") from exc
    return ClonePin(snapshot.snapshot_id,
                    f"the latest snapshot at or before {generated_at}, when the state "
                    f"manifest's invocation {invocation_id} (which committed nothing) started")
