-- The incidents of one host in a time range: when each opened and when it was last seen, whether it closed, its
-- kind and subsystem, its peak severity (in band widths), what it said and what to do about it.
-- param host String : the host
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
SELECT alert_id,
       min(start) AS opened,
       max(end) AS last_seen,
       argMax(state, (end, state = 'closed')) AS state,
       any(kind) AS kind,
       argMax(subsystem, severity) AS subsystem,
       round(max(severity), 1) AS peak_severity,
       argMax(summary, end) AS summary,
       argMax(hint, end) AS hint
FROM alerts FINAL
WHERE host = {host:String} AND end >= {since:DateTime64(3)} AND start < {until:DateTime64(3)}
GROUP BY alert_id
ORDER BY opened
