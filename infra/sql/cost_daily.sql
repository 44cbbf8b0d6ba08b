-- Judge cost per route and UTC day: the latest pane of every (route, judge model, window) from
-- costs (panes accumulate, so only the latest counts), summed over the day's windows and the
-- judge models.
WITH latest AS (
  SELECT
    route,
    judge_model,
    day,
    calls,
    input_tokens,
    cached_tokens,
    output_tokens,
    cost_usd
  FROM (
    SELECT
      c.*,
      ROW_NUMBER() OVER (
        PARTITION BY route, judge_model, window_start
        ORDER BY pane_index DESC, emitted_at DESC
      ) AS pane_rank
    FROM `${project}.${dataset}.costs` AS c
  )
  WHERE pane_rank = 1
)
SELECT
  day,
  route,
  COUNT(DISTINCT judge_model) AS judge_models,
  SUM(calls) AS calls,
  SUM(input_tokens) AS input_tokens,
  SUM(cached_tokens) AS cached_tokens,
  SUM(output_tokens) AS output_tokens,
  SUM(cost_usd) AS cost_usd
FROM latest
GROUP BY day, route
