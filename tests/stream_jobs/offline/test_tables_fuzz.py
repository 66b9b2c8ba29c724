"""The CSV and Parquet loaders under hostile tables: every table either loads into finite, sorted, de-duplicated
hosts or is refused with TableError naming the file; NaN, Inf, negative counters, clock jumps both ways,
duplicate rows and hosts, and garbage cells never crash it."""

import math

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings, strategies as st

from stream_jobs.offline.tables import TableError, load_table

T0_S = 1_700_000_000
FUZZ = settings(max_examples=1_000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CELL = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**40), 2**40),
                 st.sampled_from(["", "nan", "inf", "-inf", "x", "1e400", " 3 ", "--1"]))
STEP = st.one_of(st.just(0.1), st.just(0.0), st.floats(-3600, 3600))  # duplicates, clock jumps back and forth
HOSTS = st.sampled_from(["h1", "h2", "", "h1 ", "<b>h3</b>"])


@st.composite
def tables(draw):
    rows = draw(st.integers(0, 40))
    columns = draw(st.lists(st.sampled_from(["cpu.busy.cpu0", "net.rx_bytes.eth0", "mem.MemFree", "a,b", "ü"]),
                            min_size=1, max_size=4, unique=True))
    times, clock = [], float(T0_S)
    for _ in range(rows):
        clock += draw(STEP)
        times.append(clock)
    frame = pd.DataFrame({"timestamp": times})
    if draw(st.booleans()):
        frame["host"] = [draw(HOSTS) for _ in range(rows)]
    for column in columns:
        frame[column] = [draw(CELL) for _ in range(rows)]
    return frame


def _judged(path):
    try:
        table = load_table(path)
    except TableError as error:
        assert str(path) in str(error) or path.name in str(error), f"the error must name the file: {error}"
        return
    for host in table.hosts.values():
        assert host.host
        assert (np.diff(host.timestamps_ns) > 0).all(), "rows are sorted and de-duplicated"
        assert not np.isinf(host.values).any()
        assert host.values.shape == (len(host.timestamps_ns), len(host.channels.names))


@FUZZ
@given(tables())
def test_csv_tables(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("csv") / "input.csv"
    frame.to_csv(path, index=False)
    _judged(path)


@FUZZ
@given(tables())
def test_parquet_tables(tmp_path_factory, frame):
    path = tmp_path_factory.mktemp("parquet") / "input.parquet"
    frame.astype({c: str for c in frame.columns if frame[c].dtype == object}).to_parquet(path, index=False)
    _judged(path)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_random_bytes_as_csv(tmp_path_factory, payload):
    path = tmp_path_factory.mktemp("bytes") / "input.csv"
    path.write_bytes(payload)
    _judged(path)


def test_an_infinite_cell_is_named_by_row_and_column_or_repaired(tmp_path):
    path = tmp_path / "input.csv"
    path.write_text(f"timestamp,cpu.busy.cpu0\n{T0_S},1\n{T0_S + 1},inf\n{T0_S + 2},3\n")
    try:
        table = load_table(path)
    except TableError as error:
        assert "cpu.busy.cpu0" in str(error) and "row" in str(error)
        return
    values = next(iter(table.hosts.values())).values[:, 0]
    assert math.isnan(values[1]) and table.repairs
