-- Hallucination rate per route and event-time window, one row per window: the latest pane.
-- route_rates accumulates over firings (EARLY, ON_TIME, LATE panes, pane_index 0, 1, ...), so
-- the window's row with the highest pane_index holds the whole window; summing panes would
-- count traces several times. Late traces that arrive after the allowed lateness are in no
-- pane: see daily_rate_exact for the rate over every answer.
SELECT
  route,
  window_start,
  window_end,
  day,
  pane,
  pane_index,
  emitted_at,
  traces,
  hallucinated,
  rate,
  rate_low,
  rate_high,
  con,
  nic,
  incomplete,
  late,
  cost_usd,
  sample_trace_ids
FROM (
  SELECT
    r.*,
    ROW_NUMBER() OVER (
      PARTITION BY route, window_start
      ORDER BY pane_index DESC, emitted_at DESC
    ) AS pane_rank
  FROM `${project}.${dataset}.route_rates` AS r
)
WHERE pane_rank = 1
