"""Settings files and REVEAL_ variables: which source wins, mistakes named, and every option documented."""

import argparse

import pytest

from reveal.cli import build_parser, configurable_commands
from reveal.cli.config import ConfigError, settle
from reveal.cli.options import engine_settings


def _settled(argv, tmp_path, file_text=None, environ=None):
    parser = build_parser()
    if file_text is not None:
        (tmp_path / "reveal.toml").write_text(file_text)
        argv = [*argv[:1], "--config", str(tmp_path / "reveal.toml"), *argv[1:]]
    args = parser.parse_args(argv)
    commands = configurable_commands(parser)
    return args, settle(args, argv, commands[args.command], commands, environ=environ or {})


def test_flags_beat_variables_which_beat_the_file_which_beats_the_defaults(tmp_path):
    text = 'interval = 0.5\nrisk = 0.01\n[run]\ndata-dir = "/from/file"\nquiet = true\nlisten = "127.0.0.1:0"\n'
    args, settled = _settled(["run", "--risk", "0.2"], tmp_path, text,
                             {"REVEAL_INTERVAL": "0.25", "REVEAL_RISK": "0.3"})
    assert (args.risk, args.interval, args.data_dir, args.quiet, args.listen) == \
        (0.2, 0.25, "/from/file", True, ("127.0.0.1", 0))
    assert (settled.sources["risk"], settled.sources["interval"], settled.sources["data_dir"],
            settled.sources["window"]) == ("flag", "REVEAL_INTERVAL", "file", "default")
    assert "risk=0.2 (flag)" in settled.describe(args) and "window" not in settled.describe(args)


def test_the_environment_names_the_config_file(tmp_path):
    (tmp_path / "env.toml").write_text('[sql]\nformat = "jsonl"\n')
    parser = build_parser()
    args = parser.parse_args(["sql", "SELECT 1"])
    commands = configurable_commands(parser)
    settle(args, ["sql", "SELECT 1"], commands["sql"], commands, environ={"REVEAL_CONFIG": str(tmp_path / "env.toml")})
    assert args.format == "jsonl"


@pytest.mark.parametrize("text, named", [
    ("intervall = 1\n", "'intervall'"),
    ("[rn]\ninterval = 1\n", "[rn]"),
    ("[sql]\ninterval = 1\n", "[sql] has no option 'interval'"),
    ("[run]\nrisk = 0\n", "must be above 0"),
    ("[sql]\nformat = \"xml\"\n", "is not one of table, tsv, jsonl"),
    ("[run]\nquiet = \"maybe\"\n", "not true or false"),
    ("[run\n", "not valid TOML"),
])
def test_a_mistake_in_the_file_names_the_key_and_what_is_allowed(tmp_path, text, named):
    with pytest.raises(ConfigError, match=None) as refused:
        _settled(["run" if "[sql]" not in text else "sql", *(["SELECT 1"] if "[sql]" in text else [])], tmp_path,
                 text)
    assert named in str(refused.value)


def test_the_engine_s_settings_tree_is_read_from_its_tables_in_the_file(tmp_path):
    text = "[decision]\nclose_after_s = 20\nreopen_within_s = 120\n[watch]\npersist_s = 5\n"
    args, _ = _settled(["run"], tmp_path, text)
    settings = engine_settings(args)
    assert (settings.decision.close_after_s, settings.decision.reopen_within_s, settings.watch.persist_s) == \
        (20.0, 120.0, 5.0)
    assert settings.decision.join_within_s == 3.0, "what the file leaves out keeps its default"


@pytest.mark.parametrize("text, named", [
    ("[decision]\nclose_after = 20\n", "[decision] has no setting 'close_after'; allowed: "),
    ("[decision]\nclose_after_s = \"soon\"\n", "[decision] close_after_s = 'soon'; expected a number"),
    ("[decision]\nclose_after_s = -1\n", "decision.close_after_s is -1.0; expected a finite number"),
    ("[watch]\npersist_s = 0\n", "[watch] persist_s 0.0 must be > 0"),
])
def test_a_mistake_in_the_settings_tree_names_the_key_and_what_is_allowed(tmp_path, text, named):
    args, _ = _settled(["run"], tmp_path, text)
    with pytest.raises(ConfigError) as refused:
        engine_settings(args)
    assert named in str(refused.value)


def test_a_variable_with_a_bad_value_names_itself(tmp_path):
    with pytest.raises(ConfigError) as refused:
        _settled(["run"], tmp_path, environ={"REVEAL_WARMUP": "0"})
    assert "REVEAL_WARMUP" in str(refused.value) and "more than zero" in str(refused.value)


def test_every_option_of_every_command_says_what_it_does_and_its_default():
    parser = build_parser()
    commands = [parser]
    while commands:
        command = commands.pop()
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                commands += list(action.choices.values())
                continue
            if not action.option_strings or action.dest in ("help", "version"):
                continue
            assert action.help, f"{command.prog} {action.option_strings[0]} has no help"
            needs_default = not (action.required or isinstance(action, (argparse._StoreTrueAction,
                                                                        argparse._StoreFalseAction))
                                 or action.default is None or action.default == [] or action.default == ())
            assert not needs_default or "default" in action.help, \
                f"{command.prog} {action.option_strings[0]} does not say its default"
