import pytest

from sinks import retrospectives
from sinks.clickhouse import ClickHouseReader
from sinks.retrospectives import RetrospectiveError, parse
from reveal.cli import main


@pytest.fixture(scope="module")
def reader(chdb_dsn, recorded_run):
    reader = ClickHouseReader(chdb_dsn, recorded_run)
    yield reader
    reader.close()


def required_values(reader) -> dict[str, str]:
    """Values for the parameters that have no default, taken from the recorded run itself."""
    _, hosts = reader.query("SELECT host FROM alerts GROUP BY host ORDER BY count() DESC LIMIT 1")
    _, channels = reader.query("SELECT names[indexOf(subsystems, 'cpu')] FROM catalogs LIMIT 1")
    return {"host": hosts[0][0], "channel": channels[0][0]}


def test_at_least_eight_retrospectives_each_saying_what_it_answers():
    found = retrospectives.retrospectives()
    assert len(found) >= 8
    for name, retrospective in found.items():
        assert len(retrospective.question) > 40, name
        assert all(p.description for p in retrospective.parameters), name


@pytest.mark.parametrize("name", sorted(retrospectives.retrospectives()))
def test_each_retrospective_answers_on_a_recorded_run(reader, name):
    retrospective = retrospectives.load(name)
    needed = {p.name for p in retrospective.parameters if p.default is None}
    columns, rows = reader.query(retrospective.sql, retrospective.bound(
        {k: v for k, v in required_values(reader).items() if k in needed}))
    assert columns and rows, f"{name} returned nothing on a run with three faults"


def test_the_anomalous_hosts_are_the_ones_the_faults_were_made_on(reader):
    retrospective = retrospectives.load("anomalous-hosts")
    _, rows = reader.query(retrospective.sql, retrospective.bound({}))
    hosts_with_incidents = {row[0] for row in rows if row[4] > 0}
    assert {"h1", "h2", "h3"} <= hosts_with_incidents


def test_a_time_range_narrows_the_answer(reader):
    retrospective = retrospectives.load("anomalous-hosts")
    _, everything = reader.query(retrospective.sql, retrospective.bound({}))
    _, nothing = reader.query(retrospective.sql, retrospective.bound({"since": "1970-01-01 00:00:00",
                                                                      "until": "1970-01-02 00:00:00"}))
    assert everything and not nothing


def test_parameters_are_checked_by_name():
    retrospective = retrospectives.load("host-incidents")
    with pytest.raises(RetrospectiveError, match="needs --param host"):
        retrospective.bound({})
    with pytest.raises(RetrospectiveError, match="--param hots: host-incidents takes host, since, until"):
        retrospective.bound({"hots": "h1"})
    with pytest.raises(RetrospectiveError, match="no such retrospective; known: anomalous-hosts"):
        retrospectives.load("../tables")


def test_a_header_must_declare_exactly_what_the_query_binds():
    with pytest.raises(RetrospectiveError, match="binds"):
        parse("x", "-- What x answers.\nSELECT {host:String}")
    with pytest.raises(RetrospectiveError, match="malformed parameter line"):
        parse("x", "-- What x answers.\n-- param host\nSELECT {host:String}")
    parsed = parse("x", "-- What x answers.\n-- param since DateTime64(3) = 1970-01-01 00:00:00 : start, UTC\n"
                        "-- param cluster String = : a cluster\nSELECT {since:DateTime64(3)}, {cluster:String}")
    assert [(p.name, p.default) for p in parsed.parameters] == [("since", "1970-01-01 00:00:00"), ("cluster", "")]


def test_the_cli_lists_them_and_runs_one_with_bound_parameters(chdb_dsn, recorded_run, capsys):
    assert main(["sql", "--list"]) == 0
    listed = capsys.readouterr().out
    for name in retrospectives.retrospectives():
        assert f"\n{name}\n" in f"\n{listed}"
    assert main(["sql", "--clickhouse", chdb_dsn, "--database", recorded_run, "--format", "tsv",
                 "--query", "host-incidents", "--param", "host=h1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("alert_id\topened") and len(lines) >= 2 and all("h1" in line for line in lines[1:])
    assert main(["sql", "--clickhouse", chdb_dsn, "--database", recorded_run, "--query", "host-incidents"]) == 2
    assert "needs --param host" in capsys.readouterr().err
