"""Fixtures the collectors' tests share: a fake NVML module with two H100-like GPUs."""

import pytest

from tests.producers.collectors.fake_nvml import FakeNvml, two_h100s


@pytest.fixture
def fake() -> FakeNvml:
    return FakeNvml(two_h100s())
