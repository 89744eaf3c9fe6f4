"""The installed package finds its macros: dbt reads them through PACKAGE_PATH's
dbt_project.yml, whose ``macro-paths`` name the packaged copy (a wheel) and the top-level
``macros/`` (a source checkout, as an editable install sees it)."""

from __future__ import annotations

import os

import yaml

from dbt.include.ducklake import PACKAGE_PATH


def test_exactly_one_macro_path_exists_and_holds_the_materializations() -> None:
    with open(os.path.join(PACKAGE_PATH, "dbt_project.yml")) as f:
        project = yaml.safe_load(f)
    found = [p for p in project["macro-paths"] if os.path.isdir(os.path.join(PACKAGE_PATH, p))]
    assert len(found) == 1, f"macro-paths found under {PACKAGE_PATH}: {found}"
    assert os.path.isfile(os.path.join(PACKAGE_PATH, found[0], "materializations", "table.sql"))
