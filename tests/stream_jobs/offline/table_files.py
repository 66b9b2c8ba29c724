"""Small input files for the offline loaders' tests: a text file written in a test's folder, and a table's one host."""

T0_S = 1_700_000_000
T0_NS = T0_S * 1_000_000_000


def write_text(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def only_host(table):
    (host,) = table.hosts.values()
    return host
