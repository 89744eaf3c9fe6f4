"""A snapshot's ``changes_made`` as DuckDB's ``ducklake_snapshots()`` reports it.

The catalog stores one comma-separated string of ``kind:value`` tokens per snapshot. DuckDB
shows it as ``changes``, a ``MAP(VARCHAR, VARCHAR[])`` from a change kind (``tables_created``,
``tables_inserted_into``, ``inlined_delete``, ...) to the ids or names it touched, and so do
we, so that the same query over ``ducklake_snapshots()`` answers the same in both engines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from .models import Snapshot, parse_quoted_name, split_changes

# token kinds whose values are ids, in the order DuckDB lists them, and the key it shows
_ID_KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("dropped_table",), "tables_dropped"),
    (("altered_table",), "tables_altered"),
    (("inserted_into_table",), "tables_inserted_into"),
    (("deleted_from_table",), "tables_deleted_from"),
    (("dropped_view",), "views_dropped"),
    (("dropped_scalar_macro",), "scalar_macros_dropped"),
    (("dropped_table_macro",), "table_macros_dropped"),
    (("altered_view",), "views_altered"),
    (("inlined_insert",), "inlined_insert"),
    (("inlined_delete",), "inlined_delete"),
    (("flushed_inlined", "inline_flush"), "flushed_inlined"),
    (("merge_adjacent",), "merge_adjacent"),
    (("rewrite_delete",), "rewrite_delete"),
)
# token kinds that name a catalog entry (``"schema"."name"``) and the key DuckDB shows
_CREATED = (("created_table", "tables_created"), ("created_view", "views_created"),
            ("created_scalar_macro", "scalar_macros_created"),
            ("created_table_macro", "table_macros_created"))

# DuckDB 1.5.5's keywords (``SELECT keyword_name FROM duckdb_keywords()``): a name that is one
# of them is shown double-quoted, like a name with characters other than letters, digits and _.
KEYWORDS = frozenset("""
    abort absolute access action add admin after aggregate all also alter always analyse
    analyze and anti any array as asc asof assertion assignment asymmetric at attach attribute
    authorization backward before begin between bigint binary bit boolean both by cache call
    called cascade cascaded case cast catalog centuries century chain char character
    characteristics check checkpoint class close cluster coalesce collate collation column
    columns comment comments commit committed compression concurrently configuration conflict
    connection constraint constraints content continue conversion copy cost create cross csv
    cube current cursor cycle data database day days deallocate dec decade decades decimal
    declare default defaults deferrable deferred definer delete delimiter delimiters depends
    desc describe detach dictionary disable discard distinct do document domain double drop
    each else enable encoding encrypted end enum error escape event except exclude excluding
    exclusive execute exists explain export export_state extension extensions external extract
    false family fetch filter first float following for force foreign forward freeze from full
    function functions generated glob global grant granted group grouping grouping_id groups
    handler having header hold hour hours identity if ignore ilike immediate immutable
    implicit import in include including increment index indexes inherit inherits initially
    inline inner inout input insensitive insert install instead int integer intersect interval
    into invoker is isnull isolation join json key label lambda language large last lateral
    leading leakproof left level like limit listen load local location lock locked logged
    macro map mapping match matched materialized maxvalue merge method microsecond
    microseconds millennia millennium millisecond milliseconds minute minutes minvalue mode
    month months move name names national natural nchar new next no none not nothing notify
    notnull nowait null nullif nulls numeric object of off offset oids old on only operator
    option options or order ordinality others out outer over overlaps overlay overriding owned
    owner parallel parser partial partition partitioned passing password percent persistent
    pivot pivot_longer pivot_wider placing plans policy position positional pragma preceding
    precision prepare prepared preserve primary prior privileges procedural procedure program
    publication qualify quarter quarters quote range read real reassign recheck recursive ref
    references referencing refresh reindex relative release rename repeatable replace replica
    reset respect restart restrict returning returns revoke right role rollback rollup row
    rows rule sample savepoint schema schemas scope scroll search second seconds secret
    security select semi sequence sequences serializable server session set setof sets share
    show similar simple skip smallint snapshot some sorted source sql stable standalone start
    statement statistics stdin stdout storage stored strict strip struct subscription
    substring summarize symmetric sysid system table tables tablesample tablespace target temp
    template temporary text then ties time timestamp to trailing transaction transform treat
    trigger trim true truncate trusted try_cast type types unbounded uncommitted unencrypted
    union unique unknown unlisten unlogged unpack unpivot until update use user using vacuum
    valid validate validator value values varchar variable variadic varying verbose version
    view views virtual volatile week weeks when where whitespace window with within without
    work wrapper write xml xmlattributes xmlconcat xmlelement xmlexists xmlforest
    xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable year years yes zone
""".split())


# tokens naming the table (by id) whose rows, files or columns a snapshot changed
TABLE_CHANGES = frozenset({
    "dropped_table", "altered_table", "inserted_into_table", "deleted_from_table",
    "inlined_insert", "inlined_delete", "inline_flush", "flushed_inlined", "merge_adjacent",
    "compacted_table", "rewrite_delete"})
# tokens of new entries: a new name is none a reader resolved before, but a renamed table
# gets a new name too (with the same id), and ``created_table`` is its only token
NEW_ENTRIES = frozenset({"created_schema", "created_table", "created_view",
                         "created_scalar_macro", "created_table_macro"})


def tables_touched(snapshots: Sequence[Snapshot], since: int, latest: int,
                   begun: Callable[[], Iterable[int]]) -> frozenset[int] | None:
    """The ids of the tables whose name, content or columns the snapshots after ``since`` up
    to ``latest`` changed; ``None`` when that cannot be told from their tokens: a snapshot id
    missing (expired), an empty change list, or a token that is neither a table's change nor
    a new entry (a dropped schema or view, a macro's change, a writer's unknown token).
    ``begun()`` gives the tables whose catalog row began in that range (created or renamed),
    asked only when a ``created_table`` token says there are some."""
    ids = [s.snapshot_id for s in snapshots if since < s.snapshot_id <= latest]
    if ids != list(range(since + 1, latest + 1)):
        return None
    touched: set[int] = set()
    created = False
    for snapshot in snapshots:
        if not since < snapshot.snapshot_id <= latest:
            continue
        tokens = split_changes(snapshot.changes_made)
        if not tokens:
            return None
        for token in tokens:
            kind, _, value = token.partition(":")
            kind = kind.lower()
            if kind in TABLE_CHANGES and value.isdigit():
                touched.add(int(value))
            elif kind not in NEW_ENTRIES:
                return None
            created = created or kind == "created_table"
    if created:
        touched.update(begun())
    return frozenset(touched)


def changes_map(changes_made: str | None) -> dict[str, list[str]]:
    """``changes_made`` as DuckDB's ``ducklake_snapshots()`` shows it (keys in DuckDB's order,
    ids in ascending order, names sorted)."""
    by_kind: dict[str, list[str]] = {}
    for token in split_changes(changes_made):
        kind, _, value = token.partition(":")
        by_kind.setdefault(kind.lower(), []).append(value)
    out: dict[str, list[str]] = {}
    schemas = sorted({parse_quoted_name(v)[0] for v in by_kind.get("created_schema", [])})
    if schemas:
        out["schemas_created"] = schemas
    _ids(out, by_kind, ("dropped_schema",), "schemas_dropped")
    for kind, key in _CREATED:
        names = sorted({_entry(v) for v in by_kind.get(kind, [])})
        if names:
            out[key] = names
    for kinds, key in _ID_KINDS:
        _ids(out, by_kind, kinds, key)
    return out


def _ids(out: dict[str, list[str]], by_kind: dict[str, list[str]], kinds: tuple[str, ...],
         key: str) -> None:
    ids = sorted({int(v) for kind in kinds for v in by_kind.get(kind, [])})
    if ids:
        out[key] = [str(i) for i in ids]


def _entry(value: str) -> str:
    """``"schema"."name"`` -> ``schema.name``, each part quoted only where DuckDB quotes it."""
    schema, pos = parse_quoted_name(value)
    name = value[pos + 1:] if pos < len(value) and value[pos] == "." else ""
    if name.startswith('"'):
        name, _ = parse_quoted_name(name)
    return optionally_quoted(schema) + "." + optionally_quoted(name)


def optionally_quoted(name: str) -> str:
    """A name as DuckDB writes it where quotes are optional: bare when it is made of letters,
    digits and underscores, does not start with a digit and is no keyword."""
    simple = bool(name) and not name[0].isdigit() and all(
        ch == "_" or (ch.isascii() and ch.isalnum()) for ch in name)
    if simple and name.lower() not in KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'
