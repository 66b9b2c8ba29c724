-- Retransmission verdicts by host and category in a time range: windows judged, retransmitted and sent segments,
-- retransmits per thousand segments, and the latest reason given. A host's link is its TCP traffic to its peers:
-- fault-induced windows on one host point at that host's link or port.
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
-- param cluster String = : only this cluster (empty: every cluster)
SELECT host, category,
       count() AS windows,
       round(sum(retransmits), 1) AS retransmitted,
       round(sum(segments_out), 1) AS segments_sent,
       round(1000 * sum(retransmits) / greatest(sum(segments_out), 1), 3) AS per_thousand_segments,
       round(max(rate_z), 1) AS peak_rate_z,
       argMax(reason, end) AS latest_reason
FROM retransmissions FINAL
WHERE end >= {since:DateTime64(3)} AND end < {until:DateTime64(3)}
  AND ({cluster:String} = '' OR cluster = {cluster:String})
GROUP BY host, category
ORDER BY host, windows DESC
