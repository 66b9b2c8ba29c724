-- Which incidents recurred in a time range: incidents of the same kind, subsystem and hint opened at least
-- min_count times, with the hosts they opened on, when they were first and last seen, and one of their summaries.
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
-- param cluster String = : only this cluster (empty: every cluster)
-- param min_count UInt32 = 2 : how many openings make a recurrence
SELECT kind, subsystem, hint,
       uniqExact(alert_id) AS openings,
       uniqExact(host) AS hosts,
       arraySort(groupUniqArray(10)(host)) AS some_hosts,
       min(start) AS first_opened,
       max(start) AS last_opened,
       any(summary) AS one_summary
FROM alerts FINAL
WHERE state = 'open' AND start >= {since:DateTime64(3)} AND start < {until:DateTime64(3)}
  AND ({cluster:String} = '' OR cluster = {cluster:String})
GROUP BY kind, subsystem, hint
HAVING openings >= {min_count:UInt32}
ORDER BY openings DESC, kind, subsystem
