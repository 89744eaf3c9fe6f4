"""Customer segments, computed with PySpark from the lifetime-value mart."""

from pyspark.sql import Window
from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="table")
    at_risk_after_days = int(dbt.config.get("at_risk_after_days"))

    clv = dbt.ref("customer_lifetime_value")
    newest_order = clv.agg(F.max("last_order_date").alias("d")).collect()[0]["d"]

    buyers = Window.partitionBy(F.col("order_count") > 0).orderBy(F.col("lifetime_value").desc())
    df = (
        clv.withColumn("value_percentile", F.round(F.percent_rank().over(buyers), 4))
        .withColumn(
            "days_since_last_order",
            F.when(F.col("last_order_date").isNotNull(),
                   F.datediff(F.lit(newest_order), F.col("last_order_date"))),
        )
        .withColumn(
            "segment",
            F.when(F.col("order_count") == 0, F.lit("prospect"))
            .when(F.col("days_since_last_order") > at_risk_after_days, F.lit("at_risk"))
            .when((F.col("value_percentile") <= 0.2) & (F.col("order_count") >= 2),
                  F.lit("champion"))
            .when(F.col("order_count") >= 2, F.lit("loyal"))
            .otherwise(F.lit("new")),
        )
    )
    return df.select(
        "customer_id",
        "full_name",
        "order_count",
        "lifetime_value",
        "value_percentile",
        "days_since_last_order",
        "segment",
    )
