-- The metric–feature evidence that backed a job's findings most often and most strongly: a job is a cluster over a
-- time range. Each row is one channel and feature, with how many findings it backed, on how many hosts, and its
-- largest and typical effect in robust σ.
-- param cluster String = : the job's cluster (empty: every cluster)
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the job, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the job, UTC
-- param top UInt32 = 20 : how many rows
SELECT channel, feature,
       count() AS findings,
       uniqExact(host) AS hosts,
       round(max(abs(z)), 1) AS peak_abs_z,
       round(median(abs(z)), 1) AS median_abs_z,
       arraySort(groupUniqArray(8)(host)) AS some_hosts
FROM anomalies FINAL
ARRAY JOIN evidence_channel AS channel, evidence_feature AS feature, evidence_z AS z
WHERE ({cluster:String} = '' OR cluster = {cluster:String})
  AND end >= {since:DateTime64(3)} AND end < {until:DateTime64(3)}
GROUP BY channel, feature
ORDER BY findings DESC, peak_abs_z DESC, channel
LIMIT {top:UInt32}
