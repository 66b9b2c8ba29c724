-- One host's windows in a time range, oldest first: the host detectors' score against its threshold, whether the
-- window was anomalous, which detectors flagged it, and the regime the host was in.
-- param host String : the host
-- param since DateTime64(3) = 1970-01-01 00:00:00 : start of the range, UTC
-- param until DateTime64(3) = 2100-01-01 00:00:00 : end of the range, UTC
SELECT end, score, threshold, anomalous, flagged_by, regime, baseline_ready
FROM windows
WHERE host = {host:String} AND end >= {since:DateTime64(3)} AND end < {until:DateTime64(3)}
ORDER BY end
