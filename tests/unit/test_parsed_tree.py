"""A parsed plan's tree as the JVM writes it (``DuckLakeParsedTree.java``), read back, and the
relation names and writing nodes found in it: no JVM (the engine test compares the text with
the plan itself)."""

from __future__ import annotations

from dbt.adapters.ducklake.sql.parsed_tree import ParsedNode, decode
from dbt.adapters.ducklake.sql.plans import relation_names, writing_node

# WITH c AS (SELECT * FROM s.t) INSERT INTO s.u SELECT * FROM c x JOIN `a\tb`.`c\d` ...
WRITTEN = "\n".join([
    "0\tr\tUnresolvedWith\tUnresolvedWith\t1\t0\t90\tc",
    "1\tc\tInsertIntoStatement\tInsertIntoStatement\t1\t30\t90",
    "2\tc\tUnresolvedRelation\tUnresolvedRelation\t0\t42\t44\ts\tu",
    "2\tc\tJoin\tJoin\t0\t46\t90",
    "3\tc\tSubqueryAlias\tSubqueryAlias\t0\t60\t62\tx",
    "4\tc\tUnresolvedRelation\tUnresolvedRelation\t0\t60\t60\tc",
    "3\tc\tUnresolvedRelation\tUnresolvedRelation\t0\t68\t80\ta\\tb\tc\\\\d",
    "2\ts\tProject\tProject\t0\t\t",
    "3\tc\tUnresolvedRelation\tUnresolvedRelation\t0\t\t\tdb\tcat\tt",
    "1\ti\tSubqueryAlias\tSubqueryAlias\t0\t5\t28\tc",
    "2\tc\tUnresolvedRelation\tUnresolvedRelation\t0\t24\t26\ts\tt",
    "",
])


def test_decode_rebuilds_the_tree_with_edges_positions_and_escaped_names() -> None:
    tree = decode(WRITTEN)
    assert (tree.name, tree.statement, tree.start, tree.stop, tree.names) == \
        ("UnresolvedWith", True, 0, 90, ("c",))
    (insert,), (cte,) = tree.children, tree.inner_children
    assert cte.children[0].names == ("s", "t")
    target, join = insert.children
    assert target.names == ("s", "u") and not target.statement
    assert join.children[1].names == ("a\tb", "c\\d")
    (subquery,) = insert.subqueries
    assert (subquery.start, subquery.stop) == (None, None)
    assert subquery.children[0].names == ("db", "cat", "t")


def test_relation_names_of_a_tree() -> None:
    named = relation_names(decode(WRITTEN))
    assert named.single == [(60, 61, "c")]
    # the three-part name is no lake relation's: left out
    assert named.qualified == [(42, 45, ("s", "u")), (68, 81, ("a\tb", "c\\d")),
                               (24, 27, ("s", "t"))]
    assert named.ctes == {"c"} and named.aliases == {"x", "c"}
    # named by the alias x, and by the CTE's name (a CTE is a SubqueryAlias of its query)
    assert named.aliased == {60, 24}


def test_writing_node_follows_children_only_and_allows_session_commands_at_the_root() -> None:
    assert writing_node(decode(WRITTEN)) == "UnresolvedWith"
    query = ParsedNode("Project", "Project", children=(
        ParsedNode("UnresolvedRelation", "UnresolvedRelation", names=("s", "t")),))
    assert writing_node(query) is None
    hidden = ParsedNode("Project", "Project", subqueries=(
        ParsedNode("Command", "SomeCommand", statement=True),))
    assert writing_node(hidden) is None  # a subquery is an expression's, never a statement
    assert writing_node(ParsedNode("SetCommand", "SetCommand", statement=True)) is None
    temp = ParsedNode("CreateViewCommand", "CreateViewCommand", True, names=("LocalTempView",),
                      children=(query,))
    assert writing_node(temp) is None
    stored = ParsedNode("CreateViewCommand", "CreateViewCommand", True,
                        names=("PersistedView",))
    assert writing_node(stored) == "CreateViewCommand"
    under = ParsedNode("Project", "Project", children=(
        ParsedNode("InsertIntoDir", "InsertIntoDir"),))
    assert writing_node(under) == "InsertIntoDir"
    # a session command is allowed at the root only
    assert writing_node(ParsedNode("Project", "Project", children=(
        ParsedNode("SetCommand", "SetCommand", statement=True),))) == "SetCommand"
