-- Today's (UTC, by event time) hallucinated answers, worst first: CON before NIC, then the most
-- unsupported (non-ENT) claims, the most hallucinated spans, the highest judge cost. Each row
-- carries the answer's non-ENT claims (CON and NIC verdicts, and claims the judge could not
-- decide), in claim order. `severity_rank` 1 is the worst trace of the day.
WITH answers AS (
  SELECT * EXCEPT (verdict_rank)
  FROM (
    SELECT
      a.*,
      ROW_NUMBER() OVER (PARTITION BY trace_id ORDER BY audited_at DESC) AS verdict_rank
    FROM `${project}.${dataset}.answers` AS a
    WHERE event_time >= TIMESTAMP_TRUNC(CURRENT_TIMESTAMP(), DAY)
  )
  WHERE verdict_rank = 1 AND hallucinated
),
unsupported AS (
  SELECT
    trace_id,
    COUNT(*) AS unsupported_claims,
    -- STRUCT fields are named explicitly: bqemulator does not infer names from columns.
    ARRAY_AGG(
      STRUCT(
        claim_index AS claim_index, label AS label, claim AS claim, sentence AS sentence,
        note AS note, status AS status
      )
      ORDER BY claim_index
    ) AS claims
  FROM (
    SELECT DISTINCT trace_id, claim_index, label, claim, sentence, note, status
    FROM `${project}.${dataset}.claims`
    WHERE event_time >= TIMESTAMP_TRUNC(CURRENT_TIMESTAMP(), DAY)
      AND (label IS NULL OR label != 'ENT')
  )
  GROUP BY trace_id
)
SELECT
  ROW_NUMBER() OVER (
    ORDER BY
      CASE a.label WHEN 'CON' THEN 0 WHEN 'NIC' THEN 1 ELSE 2 END,
      COALESCE(u.unsupported_claims, 0) DESC,
      ARRAY_LENGTH(a.hallucinated_spans) DESC,
      a.cost_usd DESC,
      a.trace_id
  ) AS severity_rank,
  a.trace_id,
  a.route,
  a.event_time,
  a.label,
  a.status,
  a.n_claims,
  COALESCE(u.unsupported_claims, 0) AS unsupported_claims,
  ARRAY_LENGTH(a.hallucinated_spans) AS hallucinated_span_count,
  a.cost_usd,
  a.judge_model,
  u.claims
FROM answers AS a
LEFT JOIN unsupported AS u USING (trace_id)
