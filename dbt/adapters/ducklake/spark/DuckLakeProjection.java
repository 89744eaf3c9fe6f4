// A write's projection (each column an expression, maybe cast, named and tagged with its
// field id) applied to a Dataset in one call from Python: see write.py's ``project``, which
// builds the same Columns through PySpark where this class cannot be compiled (about 25 py4j
// round trips a column: PySpark finds the Metadata class package by package). Compiled at
// run time with Janino (jvm_classes.py): no generics, no lambdas.
//
// ``columns`` is a JSON array of {"expr": SQL text, "name": alias, "field_id": number,
// "type": a Spark DataType's JSON, or null for no cast}.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MetadataBuilder;

public class DuckLakeProjection {
  private static final String FIELD_ID_KEY = "parquet.field.id";

  public Object select(Object dataset, String columns) throws Exception {
    JsonNode spec = (JsonNode) new ObjectMapper().readTree(columns);
    Column[] out = new Column[spec.size()];
    for (int i = 0; i < spec.size(); i++) {
      JsonNode column = (JsonNode) spec.get(i);
      Column value = functions.expr(field(column, "expr").asText());
      JsonNode type = field(column, "type");
      if (type != null && !type.isNull()) {
        value = value.cast(DataType.fromJson(type.asText()));
      }
      out[i] = value.as(field(column, "name").asText(), new MetadataBuilder()
          .putLong(FIELD_ID_KEY, field(column, "field_id").asLong()).build());
    }
    return ((org.apache.spark.sql.classic.Dataset) dataset).select(out);
  }

  // Janino takes Jackson's TreeNode.get, not JsonNode's covariant override.
  private static JsonNode field(JsonNode node, String name) {
    return (JsonNode) node.get(name);
  }
}
