// The tree of a plan Spark's parser built, written out as text in one call from Python.
//
// Compiled at run time with Janino (which Spark ships) and cached as a class file: see
// parsed_tree.py, which reads the text back into ParsedNode objects. Walking the same tree
// node by node through py4j costs a round trip per method call (40-110 ms for a dbt snapshot's
// statement, against 2 ms here). Written for Janino: no generics, no lambdas.
//
// One line per node, in the order a depth-first walk meets them, its fields separated by tabs:
//   depth, edge (r: the root, c: children(), i: innerChildren(), s: QueryPlan.subqueries()),
//   nodeName(), the class's simple name, 1 if Spark marks the node a statement (Command,
//   ParsedStatement, CTEInChildren) else 0, the parser's start and stop positions (empty when
//   not recorded), then the node's names: an UnresolvedRelation's name parts, a
//   SubqueryAlias's alias, an UnresolvedWith's CTE names, a CreateViewCommand's view type.
// A subquery already met (by hashCode) is not written again. Backslash, tab and newline in
// names are written as \\, \t and \n.

import org.apache.spark.sql.catalyst.analysis.UnresolvedRelation;
import org.apache.spark.sql.catalyst.plans.QueryPlan;
import org.apache.spark.sql.catalyst.plans.logical.CTEInChildren;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.ParsedStatement;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.plans.logical.UnresolvedWith;
import org.apache.spark.sql.catalyst.trees.Origin;
import org.apache.spark.sql.catalyst.trees.TreeNode;
import org.apache.spark.sql.execution.command.CreateViewCommand;

public class DuckLakeParsedTree {
  public String write(Object root) {
    StringBuilder out = new StringBuilder();
    node((TreeNode) root, 0, 'r', out, new java.util.HashSet());
    return out.toString();
  }

  private static void node(TreeNode node, int depth, char edge, StringBuilder out,
                           java.util.HashSet seen) {
    out.append(depth).append('\t').append(edge);
    field(out, node.nodeName());
    field(out, node.getClass().getSimpleName());
    boolean statement = node instanceof Command || node instanceof ParsedStatement
        || node instanceof CTEInChildren;
    field(out, statement ? "1" : "0");
    Origin origin = node.origin();
    field(out, origin.startIndex().isDefined() ? origin.startIndex().get().toString() : "");
    field(out, origin.stopIndex().isDefined() ? origin.stopIndex().get().toString() : "");
    names(node, out);
    out.append('\n');
    for (int edges = 0; edges < 3; edges++) {
      scala.collection.Iterator below = edge(node, edges);
      while (below != null && below.hasNext()) {
        TreeNode child = (TreeNode) below.next();
        Integer hash = new Integer(child.hashCode());
        if (edges == 2 && seen.contains(hash)) {
          continue;
        }
        seen.add(hash);
        node(child, depth + 1, "cis".charAt(edges), out, seen);
      }
    }
  }

  // The nodes below ``node`` by one of its edges; null when the node has none of that kind
  // (or Spark cannot list them for a node the parser built).
  private static scala.collection.Iterator edge(TreeNode node, int edges) {
    try {
      if (edges == 0) {
        return node.children().iterator();
      }
      if (edges == 1) {
        return node.innerChildren().iterator();
      }
      return node instanceof QueryPlan ? ((QueryPlan) node).subqueries().iterator() : null;
    } catch (Exception e) {
      return null;
    }
  }

  private static void names(TreeNode node, StringBuilder out) {
    if (node instanceof UnresolvedRelation) {
      scala.collection.Iterator parts =
          ((UnresolvedRelation) node).multipartIdentifier().iterator();
      while (parts.hasNext()) {
        field(out, (String) parts.next());
      }
    } else if (node instanceof SubqueryAlias) {
      field(out, ((SubqueryAlias) node).alias());
    } else if (node instanceof UnresolvedWith) {
      scala.collection.Iterator ctes = ((UnresolvedWith) node).cteRelations().iterator();
      while (ctes.hasNext()) {
        field(out, (String) ((scala.Product) ctes.next()).productElement(0));  // (name, plan, ...)
      }
    } else if (node instanceof CreateViewCommand) {
      field(out, ((CreateViewCommand) node).viewType().toString());
    }
  }

  private static void field(StringBuilder out, String text) {
    out.append('\t');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '\\') {
        out.append("\\\\");
      } else if (c == '\t') {
        out.append("\\t");
      } else if (c == '\n') {
        out.append("\\n");
      } else {
        out.append(c);
      }
    }
  }
}
