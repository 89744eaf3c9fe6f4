// What a statement reads and how its rows are laid out, from its analysed plan, in one call
// from Python: see statement_sizing.py, which has the same rules walked through py4j (about
// 14 round trips a statement, and as many proxies to release) for a JVM where this class
// cannot be compiled. Compiled at run time with Janino (jvm_classes.py): no generics, no
// lambdas.

import java.math.BigInteger;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Range;
import org.apache.spark.sql.catalyst.plans.logical.Repartition;
import org.apache.spark.sql.catalyst.plans.logical.Union;
import org.apache.spark.sql.catalyst.trees.TreePattern;

public class DuckLakeStatementSize {
  // Spark's defaultSizeInBytes (Long.MAX_VALUE) and anything near it: a size it does not know.
  private static final BigInteger UNKNOWN = BigInteger.ONE.shiftLeft(62);

  // The bytes the analysed plan of ``dataset`` (a classic Dataset) reads: the sum of its
  // leaves' sizes; -1 when one is unknown or the plan has subqueries in expressions. A
  // reference to a CTE counts nothing: its definition's leaves are in the same plan.
  public long inputBytes(Object dataset) {
    LogicalPlan plan = analyzed(dataset);
    if (plan.containsPattern(TreePattern.PLAN_EXPRESSION())) {
      return -1;
    }
    BigInteger total = BigInteger.ZERO;
    scala.collection.Iterator leaves = plan.collectLeaves().iterator();
    while (leaves.hasNext()) {
      LogicalPlan leaf = (LogicalPlan) leaves.next();
      if (leaf.nodeName().equals("CTERelationRef")) {
        continue;
      }
      BigInteger size = leaf.stats().sizeInBytes().bigInteger();
      if (size.compareTo(UNKNOWN) >= 0) {
        return -1;
      }
      total = total.add(size);
    }
    return total.compareTo(UNKNOWN) >= 0 ? -1 : total.longValue();
  }

  // Whether the rows of ``dataset`` are spread over tasks only as its inputs happen to split:
  // no repartition, coalesce or rebalance, and no range given a number of slices.
  public boolean layoutIsImplicit(Object dataset) {
    LogicalPlan plan = analyzed(dataset);
    if (plan.containsPattern(TreePattern.REPARTITION_OPERATION())
        || plan.containsPattern(TreePattern.REBALANCE_PARTITIONS())) {
      return false;
    }
    scala.collection.Iterator leaves = plan.collectLeaves().iterator();
    while (leaves.hasNext()) {
      Object leaf = leaves.next();
      if (leaf instanceof Range && ((Range) leaf).numSlices().isDefined()) {
        return false;
      }
    }
    return true;
  }

  // ``dataset`` (a classic Dataset) with every leaf and every union followed by a coalesce to
  // one partition, when its rows are laid out implicitly (else ``dataset`` itself). Every
  // operator above then sees one partition (Spark's SinglePartition), which satisfies every
  // distribution an aggregate, a join, a window or a sort requires: the statement plans no
  // exchange and runs as one stage of one task, instead of a stage per exchange with a
  // shuffle written and read between them. The plan is taken with cached data substituted
  // (a cached part is one leaf then), so that a cache still answers for what it holds.
  public Object onePartition(Object dataset) {
    org.apache.spark.sql.classic.Dataset ds = (org.apache.spark.sql.classic.Dataset) dataset;
    if (!layoutIsImplicit(dataset)) {
      return dataset;
    }
    LogicalPlan plan = ds.queryExecution().withCachedData();
    if (plan.children().isEmpty()) {
      return dataset;
    }
    return org.apache.spark.sql.classic.Dataset.ofRows(ds.sparkSession(), coalesced(plan));
  }

  private static LogicalPlan coalesced(LogicalPlan plan) {
    if (plan.children().isEmpty()) {
      return new Repartition(1, false, plan);
    }
    java.util.ArrayList children = new java.util.ArrayList();
    scala.collection.Iterator it = plan.children().iterator();
    while (it.hasNext()) {
      children.add(coalesced((LogicalPlan) it.next()));
    }
    LogicalPlan out = (LogicalPlan) plan.withNewChildren(
        scala.jdk.javaapi.CollectionConverters.asScala(children).toSeq());
    return plan instanceof Union ? new Repartition(1, false, out) : out;
  }

  private static LogicalPlan analyzed(Object dataset) {
    return ((org.apache.spark.sql.classic.Dataset) dataset).queryExecution().analyzed();
  }
}
