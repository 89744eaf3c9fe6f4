"""Bad input through dbt: odd names round-trip, injection attempts stay data, bad types and
newer lake formats fail clearly and touch nothing."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import subprocess
import sys

import pytest
from conftest import duckdb_connect
from dbt.tests.util import run_dbt, run_dbt_and_capture
from reliability.support import child_env

from dbt.adapters.ducklake.lake import Catalog, FormatVersionError, Transaction
from dbt.adapters.ducklake.lake.tables import create_schema

pytestmark = [pytest.mark.spark]

EVIL = "'); DROP TABLE ducklake_snapshot; --"
LONG = "long_" + "n" * 100
ALIAS = 'my tåble "x"'

ODD_MODEL = f"""
{{{{ config(materialized='table', alias='{ALIAS.replace("'", "''")}',
            persist_docs={{'relation': true, 'columns': true}}) }}}}
select 1 as `we"ird`, 'a' as `with space`, 'ü' as `ünï_表`, 2 as `select`, 3 as `{LONG}`,
       '{EVIL.replace("'", "''")}' as payload
"""

ODD_YML = f"""
version: 2
models:
  - name: odd
    description: "{EVIL} and \\"quotes\\""
    columns:
      - name: payload
        description: "{EVIL}"
"""


def catalog_path(project) -> str:  # noqa: ANN001
    return project.adapter.config.credentials.catalog


class TestOddNamesThroughDbt:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"odd.sql": ODD_MODEL, "odd.yml": ODD_YML,
                "select.sql": "{{ config(materialized='table') }} select * from {{ ref('odd') }}"}

    def test_round_trip(self, project):  # noqa: ANN001
        run_dbt(["run"])
        run_dbt(["run"])  # the rebuild finds the table again by its odd name
        creds = project.adapter.config.credentials
        lake = Catalog.open(creds.catalog)
        table = lake.table(project.test_schema, ALIAS)
        names = [c.column_name for c in lake.columns(table.table_id)]
        assert names == ['we"ird', "with space", "ünï_表", "select", LONG, "payload"]
        assert lake.comment(table.table_id, lake.engine.connect()) == \
            f'{EVIL} and "quotes"'
        duck = duckdb_connect()
        duck.execute(f"ATTACH 'ducklake:sqlite:{creds.catalog.removeprefix('sqlite:///')}' "
                     "AS lake")
        row = duck.execute(
            f'SELECT "we""ird", "with space", "ünï_表", "select", "{LONG}", payload '
            f'FROM lake."{project.test_schema}"."my tåble ""x"""').fetchall()
        assert row == [(1, "a", "ü", 2, 3, EVIL)]
        assert duck.execute('SELECT count(*) FROM lake."' + project.test_schema +
                            '"."select"').fetchone() == (1,)
        assert len(lake.snapshots()) >= 3  # ducklake_snapshot is still there
        _, out = run_dbt_and_capture(["show", "--inline",
                                      "select payload from {{ ref('odd') }}"])
        assert "'); DROP TABLE du" in out


class TestBadColumnType:
    @pytest.fixture(scope="class")
    def seeds(self):  # noqa: ANN201
        return {"s.csv": "id,name\n1,a\n"}

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"seeds.yml": """
version: 2
seeds:
  - name: s
    config:
      column_types: {id: "bigint); DROP TABLE ducklake_snapshot; --"}
"""}

    def test_clear_error_and_nothing_written(self, project):  # noqa: ANN001
        lake = Catalog.open(catalog_path(project))
        before = len(lake.snapshots())
        results = run_dbt(["seed"], expect_pass=False)
        message = results.results[0].message
        assert "bigint); DROP TABLE" in message or "PARSE_SYNTAX_ERROR" in message, message
        assert len(lake.snapshots()) == before


class TestSparkErrorsReadLikeSpark:
    """A model that names a missing column fails with Spark's message, its suggestion and
    position; the analyzed plan (temp views, hidden columns, file paths) stays in the debug
    log."""

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"base.sql": "{{ config(materialized='table') }} "
                            "select 1 as id, 'a' as name",
                "typo.sql": "{{ config(materialized='table') }}\n"
                            "select id, nmae from {{ ref('base') }}"}

    def test_message_without_internals(self, project):  # noqa: ANN001
        run_dbt(["run", "--select", "base"])
        results, out = run_dbt_and_capture(["run", "--select", "typo"], expect_pass=False)
        message = results.results[0].message
        assert "[UNRESOLVED_COLUMN.WITH_SUGGESTION]" in message, message
        assert "Did you mean one of the following? [`id`, `name`]" in message, message
        # the position is in the statement dbt ran (target/run/...), the model inside a DDL
        assert re.search(r"at line \d+, position 11 of the statement run: nmae", message), \
            message
        for internal in ("_ducklake_", "SubqueryAlias", "Project [", "Relation", ".parquet"):
            assert internal not in message, message
            assert internal not in out.split("Spark's error in full")[0], out
        assert "compiled code at" in out, out


class TestNewerLakeFormatIsRefused:
    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"m.sql": "{{ config(materialized='table') }} select 1 as id"}

    def test_refused_untouched(self, project):  # noqa: ANN001
        run_dbt(["run"])
        path = catalog_path(project).removeprefix("sqlite:///")
        con = sqlite3.connect(path)
        con.execute("UPDATE ducklake_metadata SET value = '1.1' WHERE key = 'version'")
        con.commit()
        con.close()
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        # a new dbt process, as a user runs it (this one keeps its open lake)
        proc = subprocess.run(
            [sys.executable, "-m", "dbt.cli.main", "run", "--project-dir",
             project.project_root, "--profiles-dir", project.profiles_dir],
            capture_output=True, text=True, env=child_env(), timeout=600)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0
        assert "format version '1.1'" in out and "not modified" in out, out[-2000:]
        assert hashlib.sha256(open(path, "rb").read()).hexdigest() == digest


def test_a_lake_upgraded_while_open_is_not_written(tmp_path):  # noqa: ANN001
    """A long-lived writer (a dbt server, a notebook) checks the format at every commit."""
    path = tmp_path / "c.sqlite"
    lake = Catalog.open(f"sqlite:///{path}", str(tmp_path / "data"))
    con = sqlite3.connect(path)
    con.execute("UPDATE ducklake_metadata SET value = '1.1' WHERE key = 'version'")
    con.commit()
    con.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    tx = Transaction(lake)
    create_schema(tx, "s")
    with pytest.raises(FormatVersionError, match="'1.1'.*not modified"):
        tx.commit()
    lake.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
