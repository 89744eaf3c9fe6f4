"""DuckLake data inlining: small writes kept as rows in the catalog instead of Parquet files.

A commit of no more rows than the inlining limit (the ``data_inlining_row_limit`` option)
puts its rows into the catalog table ``ducklake_inlined_data_<table_id>_<schema_version>``,
one column per top-level table column, each row with its ``row_id`` and
``begin_snapshot``/``end_snapshot``; small deletes from Parquet files go to
``ducklake_inlined_delete_<table_id>``. A flush later moves the inlined rows into Parquet files.
All of it follows DuckDB 1.5.5, so that either engine reads what the other wrote.

* :mod:`.rows` -- the catalog's inlined-data and inlined-delete tables: create, insert, end
  rows, read, statistics of inlined rows, live size.
* :mod:`.codec` -- the values of inlined columns, per catalog dialect (SQLite, PostgreSQL).
* :mod:`.flush` -- the commit of a flush of inlined rows to Parquet.
"""
