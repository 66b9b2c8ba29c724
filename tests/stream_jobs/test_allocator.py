import pytest

from stream_jobs.allocator import SETTINGS, release_free_memory, tune_allocator


def test_every_setting_is_applied_on_glibc():
    assert tune_allocator({}) == {variable: value for variable, (_, value) in SETTINGS.items()}


def test_a_setting_the_environment_makes_is_left_to_it():
    applied = tune_allocator({"MALLOC_MMAP_THRESHOLD_": "65536"})
    assert "MALLOC_MMAP_THRESHOLD_" not in applied and "MALLOC_TRIM_THRESHOLD_" in applied


def test_the_reveal_command_tunes_its_own_process(monkeypatch, capsys):
    import reveal.cli as cli
    applied = []
    monkeypatch.setattr(cli, "tune_allocator", lambda: applied.append(tune_allocator({})))
    with pytest.raises(SystemExit):
        cli.main(["bench", "engine", "--help"])
    assert applied == [{variable: value for variable, (_, value) in SETTINGS.items()}]


def test_free_memory_goes_back_to_the_system():
    import psutil

    tune_allocator({})
    blocks = [bytearray(256 << 10) for _ in range(400)]  # ~100 MB below the mmap threshold: taken from the heap
    held = psutil.Process().memory_info().rss
    del blocks
    assert release_free_memory()  # glibc says it gave memory back
    assert psutil.Process().memory_info().rss < held - (80 << 20)
