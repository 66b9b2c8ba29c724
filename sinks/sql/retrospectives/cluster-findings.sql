-- What comparing each host with the rest of its cluster found in a time range: per host and kind (a host apart
-- from its peers, a configuration unlike theirs, retransmissions its traffic does not explain), how many findings,
-- the channels named as evidence, and the strongest claim.
-- param cluster String = : only this cluster (empty: every cluster)
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
SELECT host, cluster,
       arrayJoin(arrayIntersect(detectors, ['peer', 'configuration', 'retransmissions'])) AS finding,
       count() AS findings,
       min(start) AS first_window,
       max(end) AS last_window,
       round(max(score), 1) AS peak_score,
       arraySort(groupUniqArrayArray(10)(evidence_channel)) AS channels,
       argMax(claim, score) AS strongest_claim
FROM anomalies FINAL
WHERE hasAny(detectors, ['peer', 'configuration', 'retransmissions'])
  AND ({cluster:String} = '' OR cluster = {cluster:String})
  AND end >= {since:DateTime64(3)} AND end < {until:DateTime64(3)}
GROUP BY host, cluster, finding
ORDER BY findings DESC, host, finding
