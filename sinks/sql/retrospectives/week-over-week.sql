-- This week against the week before, per host: judged windows, the share of them that were anomalous, incidents
-- opened and the mean detector score in each week. The weeks end at `until`, or at the newest stored window.
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of this week, UTC (later than the newest window: the newest window)
-- param cluster String = : only this cluster (empty: every cluster)
WITH least({until:DateTime64(3)}, (SELECT max(end) FROM windows)) AS week_end,
     week_end - INTERVAL 7 DAY AS week_start,
     week_start - INTERVAL 7 DAY AS last_week_start,
incidents AS (
    SELECT host, uniqExactIf(alert_id, start >= week_start) AS this_week,
           uniqExactIf(alert_id, start < week_start) AS last_week
    FROM alerts FINAL
    WHERE state = 'open' AND start >= last_week_start AND start < week_end
      AND ({cluster:String} = '' OR cluster = {cluster:String})
    GROUP BY host
)
SELECT windows.host AS host,
       countIf(end < week_start) AS last_week_windows,
       countIf(end >= week_start) AS this_week_windows,
       round(countIf(anomalous = 1 AND end < week_start) / greatest(countIf(end < week_start), 1), 4)
           AS last_week_anomalous_share,
       round(countIf(anomalous = 1 AND end >= week_start) / greatest(countIf(end >= week_start), 1), 4)
           AS this_week_anomalous_share,
       any(incidents.last_week) AS last_week_incidents,
       any(incidents.this_week) AS this_week_incidents,
       round(avgIf(score, end < week_start), 3) AS last_week_mean_score,
       round(avgIf(score, end >= week_start), 3) AS this_week_mean_score
FROM windows
LEFT JOIN incidents ON incidents.host = windows.host
WHERE baseline_ready = 1 AND end >= last_week_start AND end <= week_end
  AND ({cluster:String} = '' OR cluster = {cluster:String})
GROUP BY host
ORDER BY this_week_anomalous_share DESC, host
