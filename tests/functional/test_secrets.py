"""The PostgreSQL password never reaches the console or dbt's log: `dbt debug`, a run, and
the errors of a bad scheme, an unparsable libpq string and an unreachable server, with the
password in a URL, in a libpq string or in the profile's `password` key."""

from __future__ import annotations

import os
import traceback
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from conftest import (
    PG_DB,
    PG_HOST,
    PG_PORT,
    PG_USER,
    SPARK_TEST_CONF,
    skip_or_fail_without_postgres,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture
from dbt_common.exceptions import DbtDatabaseError

pytestmark = [pytest.mark.spark, pytest.mark.postgres]

URL_PASSWORD = "Pa@ss:w/rd%9z"
LIBPQ_PASSWORD = "Li@bq:p/ss %9'z"
KEY_PASSWORD = "Ke@y:p/ss %9z"
SECRETS = (URL_PASSWORD, LIBPQ_PASSWORD, KEY_PASSWORD)


def assert_hidden(text: str) -> None:
    """No password of this module, nor its URL encoding, nor a part of one around an ``@``."""
    for secret in SECRETS:
        for form in (secret, quote(secret, safe=""), *secret.replace(" ", "@").split("@")):
            assert len(form) < 4 or form not in text, form


def everything_printed(exc: BaseException) -> str:
    """An exception as a traceback prints it, with its causes and contexts."""
    return "".join(traceback.format_exception(exc))


@pytest.fixture(scope="class")
def metadata_schema() -> Iterator[str]:
    skip_or_fail_without_postgres()
    import psycopg

    schema = f"lake_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}",
                         autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


class TestPasswordsStayHidden:
    @pytest.fixture(scope="class")
    def dbt_profile_data(self, unique_schema, metadata_schema,  # noqa: ANN001, ANN201
                         tmp_path_factory):  # noqa: ANN001
        data = str(tmp_path_factory.mktemp("lake") / "data") + "/"
        base = {"type": "ducklake", "schema": unique_schema, "data_path": data,
                "metadata_schema": metadata_schema, "threads": 1, "master": "local[2]",
                "spark_conf": dict(SPARK_TEST_CONF)}
        where = f"{PG_HOST}:{PG_PORT}/{PG_DB}"
        libpq = f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}"
        quoted = LIBPQ_PASSWORD.replace("'", "\\'")
        outputs = {
            # the local server trusts every login: these passwords are sent and ignored
            "url": {**base, "catalog": f"postgresql+psycopg://{PG_USER}:{URL_PASSWORD}@{where}"},
            "libpq": {**base, "catalog": f"postgres:{libpq} password='{quoted}'"},
            "key": {**base, "catalog": f"postgres:{libpq}",
                    "password": "{{ env_var('DUCKLAKE_TEST_PASSWORD') }}"},
            "bad_scheme": {**base, "catalog": f"mysql://alice:{URL_PASSWORD}@{where}"},
            "bad_libpq": {**base, "catalog": f"postgres:{libpq} password={LIBPQ_PASSWORD}"},
            "unreachable_url": {**base, "catalog": (
                f"postgresql+psycopg://alice:{URL_PASSWORD}@127.0.0.1:1/{PG_DB}"
                "?connect_timeout=3")},
            "unreachable_libpq": {**base, "catalog": (
                f"postgres:dbname={PG_DB} host=127.0.0.1 port=1 connect_timeout=3 user=alice "
                f"password='{quoted}'")},
        }
        return {"test": {"outputs": outputs, "target": "url"}}

    @pytest.fixture(scope="class", autouse=True)
    def password_variable(self) -> Iterator[None]:
        os.environ["DUCKLAKE_TEST_PASSWORD"] = KEY_PASSWORD
        yield
        del os.environ["DUCKLAKE_TEST_PASSWORD"]

    @pytest.fixture(scope="class")
    def models(self):  # noqa: ANN201
        return {"one.sql": "select 1 as id"}

    def test_debug_runs_and_errors_print_no_password(self, project, capsys, logs_dir):  # noqa: ANN001
        printed = []
        for target in ("url", "libpq", "key"):
            _, out = run_dbt_and_capture(["debug", "--target", target])
            printed.append(out + capsys.readouterr().out)
            assert "catalog: postgres" in printed[-1]
            assert ("***" in printed[-1]) == (target != "key")  # "key": none in the catalog
            run_dbt(["run", "--target", target])
        for target, reason in [
            ("bad_scheme", "unknown catalog scheme 'mysql'"),
            ("bad_libpq", "cannot parse the libpq connection string"),
            ("unreachable_url", "cannot connect to the DuckLake catalog"),
            ("unreachable_libpq", "cannot connect to the DuckLake catalog"),
        ]:
            _, out = run_dbt_and_capture(["debug", "--target", target], expect_pass=False)
            out += capsys.readouterr().out
            assert reason in out, out
            printed.append(out)
            with pytest.raises(DbtDatabaseError, match=reason) as failure:
                run_dbt(["run", "--target", target])  # fails as it opens the lake
            printed.append(everything_printed(failure.value) + capsys.readouterr().out)
        for out in printed:
            assert_hidden(out)
        with open(os.path.join(logs_dir, "dbt.log")) as log:
            logged = log.read()
        assert "***" in logged and "cannot connect to the DuckLake catalog" in logged
        assert_hidden(logged)
