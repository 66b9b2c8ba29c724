"""`reveal alerts`' own option types: a severity is a finite number of at least 0, a webhook an http(s) URL with a
host."""

import argparse

import pytest

from reveal.cli.alerts import severity, webhook_url


def test_a_severity_is_a_finite_number_of_at_least_zero():
    assert severity("0") == 0.0 and severity("2.5") == 2.5 and severity("1e3") == 1000.0
    for text in ("-1", "inf", "nan", "high"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(text)):
            severity(text)


def test_a_webhook_is_an_http_or_https_url_with_a_host():
    for url in ("http://127.0.0.1:9093/api/v2/alerts", "https://hooks.slack.com/services/T/B/x"):
        assert webhook_url(url) == url
    for text in ("ftp://x/hook", "http:///hook", "hooks.slack.com/services", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="http:// or https:// URL with a host"):
            webhook_url(text)
