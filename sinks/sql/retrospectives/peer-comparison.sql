-- How a host compares with its peers on one channel over a time range: each host's level (the mean of a gauge, the
-- rate per second of a counter), its 95th percentile, and how far it sits from the median host of its cluster.
-- param channel String : a channel name, as `reveal channels` lists them (for example cpu.user.all)
-- param host String = : the host to mark (empty: none)
-- param cluster String = : only this cluster (empty: every cluster)
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
WITH (SELECT any(kinds[indexOf(names, {channel:String})]) FROM catalogs WHERE has(names, {channel:String}))
         AS channel_kind,
per_host AS (
    SELECT host, cluster, any(unit) AS unit, count() AS samples,
           if(channel_kind IN ('counter', 'event'),
              (argMax(value, ts) - argMin(value, ts)) / greatest(dateDiff('millisecond', min(ts), max(ts)) / 1000, 0.001),
              avg(value)) AS level,
           quantile(0.95)(value) AS p95
    FROM channel_values(name = {channel:String})
    WHERE ts >= {since:DateTime64(3)} AND ts < {until:DateTime64(3)} AND isFinite(value)
      AND ({cluster:String} = '' OR cluster = {cluster:String})
    GROUP BY host, cluster
)
SELECT host, cluster, unit, channel_kind AS kind, samples, level, p95,
       level - median(level) OVER (PARTITION BY cluster) AS offset_from_median,
       round((level - median(level) OVER (PARTITION BY cluster))
             / nullIf(abs(median(level) OVER (PARTITION BY cluster)), 0), 4) AS relative_offset,
       host = {host:String} AS marked
FROM per_host
ORDER BY cluster, level DESC, host
