"""The workloads' command line: bad peers, ranks and rates, and checkpoints without a folder, are refused with exit
status 2."""

from __future__ import annotations

import pytest

from reveal.lab.workloads import main

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("argv", [
    ["train", "--rank", "2", "--peers", "127.0.0.1:1,127.0.0.1:2"],
    ["train", "--rank", "0", "--peers", "127.0.0.1:1"],
    ["train", "--rank", "0", "--peers", "127.0.0.1:1,127.0.0.1:1"],
    ["train", "--rank", "0", "--peers", "127.0.0.1,127.0.0.1:2"],
    ["infer", "client", "--server", "127.0.0.1:1", "--rate", "0"],
])
def test_command_line_rejects_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_checkpoints_need_a_folder():
    with pytest.raises(SystemExit):
        main(["train", "--rank", "0", "--peers", "127.0.0.1:1,127.0.0.1:2", "--checkpoint-every", "5"])
