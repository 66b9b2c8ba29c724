-- Which hosts were anomalous in a time range, and why: their anomalous windows, their incidents, and the subsystem
-- and words of their strongest incident.
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
-- param cluster String = : only this cluster (empty: every cluster)
WITH judged AS (
    SELECT host, countIf(baseline_ready = 1) AS judged_windows, countIf(anomalous = 1) AS anomalous_windows
    FROM windows
    WHERE end >= {since:DateTime64(3)} AND end < {until:DateTime64(3)}
      AND ({cluster:String} = '' OR cluster = {cluster:String})
    GROUP BY host
), incidents AS (
    SELECT host, uniqExact(alert_id) AS incidents, max(severity) AS peak_severity,
           argMax(subsystem, severity) AS strongest_subsystem, argMax(summary, severity) AS strongest_summary
    FROM alerts FINAL
    WHERE end >= {since:DateTime64(3)} AND start < {until:DateTime64(3)}
      AND ({cluster:String} = '' OR cluster = {cluster:String})
    GROUP BY host
)
SELECT judged.host AS host, judged_windows, anomalous_windows,
       round(anomalous_windows / greatest(judged_windows, 1), 4) AS anomalous_share,
       incidents.incidents AS incidents, round(peak_severity, 1) AS peak_severity, strongest_subsystem,
       strongest_summary
FROM judged
LEFT JOIN incidents ON incidents.host = judged.host
WHERE anomalous_windows > 0 OR incidents.incidents > 0
ORDER BY peak_severity DESC, anomalous_windows DESC, host
