"""Catalog passwords: masked in everything printed (strings, reprs, errors and their causes),
whatever characters they hold, in URLs and libpq strings; given apart from the string too."""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from conftest import PG_DB, PG_HOST, PG_PORT, PG_USER, skip_or_fail_without_postgres
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ducklake.credentials import DuckLakeCredentials
from dbt.adapters.ducklake.lake import Catalog
from dbt.adapters.ducklake.lake.connect import parse_catalog
from dbt.adapters.ducklake.lake.errors import CatalogConnectionError
from dbt.adapters.ducklake.lake.secrets import mask_catalog, redact, remember

# Every character that has broken a masking: @ : / % (and, in libpq strings, a space and
# quotes). The URL password is written unencoded, as users paste it.
URL_PASSWORD = "Pa@ss:w/rd%1"
LIBPQ_PASSWORD = "Pa@ss:w/ rd%1'\"x"
LIBPQ_QUOTED = "'Pa@ss:w/ rd%1\\'\"x'"  # as written in a libpq string


def url(host: str = "127.0.0.1", port: int | str = 5432, password: str = URL_PASSWORD) -> str:
    return f"postgresql+psycopg://alice:{password}@{host}:{port}/{PG_DB}"


def conninfo(port: int | str = 5432, password: str = LIBPQ_QUOTED) -> str:
    return f"postgres:dbname={PG_DB} host=127.0.0.1 port={port} user=alice password={password}"


def assert_hidden(text: str, password: str) -> None:
    """Neither the password, nor its URL encoding, nor a long piece of it is in ``text``."""
    for form in (password, quote(password, safe="")):
        assert form not in text
    for piece in password.replace(" ", "@").split("@"):
        assert len(piece) < 4 or piece not in text, piece


def everything_printed(exc: BaseException) -> str:
    """An exception as a traceback prints it, with its causes and contexts."""
    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize(("catalog", "password", "shown"), [
    (url(), URL_PASSWORD, f"postgresql+psycopg://alice:***@127.0.0.1:5432/{PG_DB}"),
    (url().replace("postgresql+psycopg", "postgres"), URL_PASSWORD, None),
    (f"postgres://alice@h/db?sslmode=require&password={URL_PASSWORD}", URL_PASSWORD,
     "postgres://alice@h/db?sslmode=require&password=***"),
    (conninfo(), LIBPQ_PASSWORD,
     f"postgres:dbname={PG_DB} host=127.0.0.1 port=5432 user=alice password=***"),
    (f"ducklake:postgres:password={LIBPQ_QUOTED} dbname=x", LIBPQ_PASSWORD,
     "ducklake:postgres:password=*** dbname=x"),
])
def test_the_password_is_masked_and_still_used(catalog, password, shown) -> None:  # noqa: ANN001
    masked = mask_catalog(catalog)
    assert_hidden(masked, password)
    if shown:
        assert masked == shown
    target = parse_catalog(catalog)
    assert_hidden(target.display + repr(target) + str(target.url) + repr(target.url), password)
    assert password in (target.url.password, target.connect_args.get("password"))


@pytest.mark.parametrize("catalog", [
    # unknown schemes, and none at all
    f"mysql://alice:{URL_PASSWORD}@h/db",
    f"alice:{URL_PASSWORD}@h/db",
    # libpq strings that do not parse: an unquoted space, an unterminated quote
    f"postgres:dbname=x password={LIBPQ_PASSWORD} host=h",
    f"postgres:dbname=x host=h password='{URL_PASSWORD} other",
    # a URL with a port that is not a number
    f"postgresql://alice:{URL_PASSWORD}@h:5x/db",
])
def test_bad_catalog_strings_fail_without_the_password(catalog: str, tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(CatalogConnectionError) as failure:
        Catalog.open(catalog, str(tmp_path / "data"))
    assert_hidden(everything_printed(failure.value), URL_PASSWORD)
    assert_hidden(everything_printed(failure.value), LIBPQ_PASSWORD)


@pytest.mark.parametrize("catalog", [url(port=1), conninfo(port=1)])
def test_an_unreachable_server_fails_without_the_password(catalog: str, tmp_path) -> None:  # noqa: ANN001
    with pytest.raises(CatalogConnectionError, match="cannot connect to the DuckLake catalog") \
            as failure:
        Catalog.open(catalog + ("?connect_timeout=3" if "://" in catalog else
                                " connect_timeout=3"), str(tmp_path / "data"))
    assert "***" in str(failure.value)
    assert_hidden(everything_printed(failure.value), URL_PASSWORD)
    assert_hidden(everything_printed(failure.value), LIBPQ_PASSWORD)


def test_the_password_given_apart() -> None:
    target = parse_catalog(url(password="").replace("alice:@", "alice@"), password=URL_PASSWORD)
    assert target.url.password == URL_PASSWORD and "***" in target.display
    target = parse_catalog("postgres:dbname=x host=h", password=LIBPQ_PASSWORD)
    assert target.connect_args["password"] == LIBPQ_PASSWORD
    assert_hidden(repr(target), LIBPQ_PASSWORD)
    with pytest.raises(CatalogConnectionError, match="keep one of them"):
        parse_catalog(url(), password="other")
    with pytest.raises(CatalogConnectionError, match="keep one of them"):
        parse_catalog(url() + "?password=other")
    with pytest.raises(CatalogConnectionError, match="SQLite catalog takes no password"):
        parse_catalog("sqlite:///c.sqlite", password="other")


def test_url_escapes_are_decoded_as_sqlalchemy_does() -> None:
    assert parse_catalog(url(password="a%40b%25")).url.password == "a@b%"
    assert parse_catalog(url(password="a%b")).url.password == "a%b"  # no escape: as written


def test_driver_messages_lose_known_passwords_only() -> None:
    """A password once used is masked in any message we repeat, as written and URL-encoded;
    one too short to search for leaves messages readable (the catalog string still masks
    it)."""
    remember("Dr1ver@pass")
    assert redact("auth failed for Dr1ver@pass and Dr1ver%40pass") == "auth failed for *** and ***"
    remember("ab")
    assert redact("a table ab") == "a table ab"
    assert mask_catalog("postgresql://u:ab@h/db") == "postgresql://u:***@h/db"


# ------------------------------------------------------------------ the profile
def profile(**extra: object) -> DuckLakeCredentials:
    return DuckLakeCredentials.from_dict({"schema": "analytics", **extra})


@pytest.mark.parametrize(("catalog", "password"), [(url(), URL_PASSWORD),
                                                   (conninfo(), LIBPQ_PASSWORD)])
def test_credentials_print_no_password(catalog: str, password: str) -> None:
    creds = profile(catalog=catalog)
    info = dict(creds.connection_info())  # what dbt debug prints
    assert info["catalog"].endswith(("***@127.0.0.1:5432/" + PG_DB, "password=***"))
    assert_hidden(repr(creds) + str(info) + creds.unique_field, password)
    assert creds.catalog == catalog  # still what the runtime connects with


def test_the_password_key_is_never_printed() -> None:
    creds = profile(catalog=f"postgresql+psycopg://alice@h/{PG_DB}", password=URL_PASSWORD)
    assert creds.password == URL_PASSWORD
    assert "password='***'" in repr(creds)
    assert_hidden(repr(creds) + str(dict(creds.connection_info())) + creds.unique_field,
                  URL_PASSWORD)
    assert profile(password=12345).password == "12345"  # dbt renders digits as a number
    assert profile(**{"pass": "x"}).password == "x"  # dbt-postgres's alias
    with pytest.raises(DbtRuntimeError, match="unknown key"):
        profile(passwd="x")


# ------------------------------------------------------------------ the password reaches libpq
@pytest.fixture
def metadata_schema() -> Iterator[str]:
    skip_or_fail_without_postgres()
    import psycopg

    schema = f"lake_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(f"dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}",
                         autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.postgres
@pytest.mark.parametrize(("catalog", "password", "apart"), [
    (f"postgresql+psycopg://{PG_USER}:{URL_PASSWORD}@{PG_HOST}:{PG_PORT}/{PG_DB}",
     URL_PASSWORD, None),
    (f"postgres:dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER} "
     f"password={LIBPQ_QUOTED}", LIBPQ_PASSWORD, None),
    (f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DB}", URL_PASSWORD, "key"),
    (f"postgres:dbname={PG_DB} host={PG_HOST} port={PG_PORT} user={PG_USER}",
     LIBPQ_PASSWORD, "key"),
    (f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DB}", URL_PASSWORD,
     "PGPASSWORD"),
])
def test_the_server_gets_the_password(catalog, password, apart, metadata_schema,  # noqa: ANN001
                                      tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The password psycopg sent is exactly the one written (the local server trusts every
    login, so psycopg's own record of the connection is what can be checked)."""
    if apart == "PGPASSWORD":
        monkeypatch.setenv("PGPASSWORD", password)  # libpq's own, read by psycopg
    lake = Catalog.open(catalog, str(tmp_path / "data"), metadata_schema=metadata_schema,
                        password=password if apart == "key" else None)
    try:
        raw = lake.engine.raw_connection()
        try:
            assert raw.driver_connection.info.password == password  # type: ignore[union-attr]
        finally:
            raw.close()
        assert_hidden(repr(lake.engine) + repr(lake.engine.url) + lake.target.display,
                      password)
    finally:
        lake.close()
