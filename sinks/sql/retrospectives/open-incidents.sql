-- The incidents open now: each incident whose latest event is not a close, with its host, kind, subsystem, when it
-- opened, its latest severity and its words.
-- param cluster String = : only this cluster (empty: every cluster)
SELECT alert_id, host, cluster, kind, subsystem, opened, last_seen, round(severity, 1) AS severity, summary, hint
FROM (
    SELECT alert_id, any(host) AS host, any(cluster) AS cluster, any(kind) AS kind,
           argMax(subsystem, end) AS subsystem, min(start) AS opened, max(end) AS last_seen,
           argMax(severity, end) AS severity, argMax(summary, end) AS summary, argMax(hint, end) AS hint,
           argMax(state, (end, state = 'closed')) = 'closed' AS closed
    FROM alerts FINAL
    WHERE {cluster:String} = '' OR alerts.cluster = {cluster:String}
    GROUP BY alert_id
)
WHERE NOT closed
ORDER BY severity DESC, opened
