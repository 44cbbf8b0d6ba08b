-- Exact hallucination rate per route and UTC day of event time, from the answers table. Unlike
-- the windowed route_rates, it counts every audited answer, including the late traces that
-- arrived after their window closed. A trace audited twice (redelivery) counts once: its
-- latest verdict. Incomplete answers are kept out of the rate and counted apart.
WITH answers AS (
  SELECT * EXCEPT (verdict_rank)
  FROM (
    SELECT
      a.*,
      ROW_NUMBER() OVER (PARTITION BY trace_id ORDER BY audited_at DESC) AS verdict_rank
    FROM `${project}.${dataset}.answers` AS a
  )
  WHERE verdict_rank = 1
),
daily AS (
  SELECT
    DATE(event_time) AS day,
    route,
    COUNTIF(status = 'ok') AS traces,
    COUNTIF(status = 'ok' AND hallucinated) AS hallucinated,
    COUNTIF(status = 'ok' AND label = 'CON') AS con,
    COUNTIF(status = 'ok' AND label = 'NIC') AS nic,
    COUNTIF(status = 'incomplete') AS incomplete,
    COUNTIF(late) AS late,
    SUM(cost_usd) AS cost_usd
  FROM answers
  GROUP BY day, route
)
SELECT
  day,
  route,
  traces,
  hallucinated,
  SAFE_DIVIDE(hallucinated, traces) AS rate,
  -- 95% Wilson score interval, as route_rates computes it (z = 1.959964), clamped to hold the
  -- rate; null when there is no complete answer.
  CASE WHEN traces > 0 THEN LEAST(hallucinated / traces, GREATEST(0.0,
    (hallucinated + 1.920729 - 1.959964 * SQRT(
      hallucinated * (traces - hallucinated) / traces + 0.960365)) / (traces + 3.841459)))
  END AS rate_low,
  CASE WHEN traces > 0 THEN GREATEST(hallucinated / traces, LEAST(1.0,
    (hallucinated + 1.920729 + 1.959964 * SQRT(
      hallucinated * (traces - hallucinated) / traces + 0.960365)) / (traces + 3.841459)))
  END AS rate_high,
  con,
  nic,
  incomplete,
  late,
  cost_usd
FROM daily
