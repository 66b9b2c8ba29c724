"""Kafka TLS and SASL settings: a plaintext default, protocols and mechanisms checked, the environment overridden
by options but never for a secret, and TLS files handed to clients only over a TLS protocol."""

import pytest

from schemas.kafka_security import ENVIRONMENT, PROTOCOLS, KafkaSecurity


def test_the_default_is_a_plaintext_broker_without_credentials():
    security = KafkaSecurity()
    assert not security.uses_sasl and not security.uses_tls
    assert security.client_config() == {"security.protocol": "PLAINTEXT"}
    assert security.faust_credentials() is None


@pytest.mark.parametrize("protocol, sasl, tls", [("PLAINTEXT", False, False), ("SSL", False, True),
                                                 ("SASL_PLAINTEXT", True, False), ("SASL_SSL", True, True)])
def test_each_protocol_says_whether_it_authenticates_and_encrypts(protocol, sasl, tls):
    security = KafkaSecurity(protocol=protocol, sasl_username="u", sasl_password="p")
    assert (security.uses_sasl, security.uses_tls) == (sasl, tls)
    assert protocol in PROTOCOLS


def test_an_unknown_sasl_mechanism_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="GSSAPI.*is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"):
        KafkaSecurity(protocol="SASL_SSL", sasl_mechanism="GSSAPI", sasl_username="u", sasl_password="p")


def test_options_override_the_environment_but_empty_ones_leave_it():
    environment = {ENVIRONMENT["protocol"]: "SASL_PLAINTEXT", ENVIRONMENT["sasl_username"]: "from-env",
                   ENVIRONMENT["sasl_password"]: "pw", ENVIRONMENT["sasl_mechanism"]: "SCRAM-SHA-256"}
    security = KafkaSecurity.from_environment(environment, sasl_username="from-option", sasl_mechanism="")
    assert (security.protocol, security.sasl_username, security.sasl_mechanism) == \
        ("SASL_PLAINTEXT", "from-option", "SCRAM-SHA-256")
    assert security.client_config() == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                                        "sasl.username": "from-option", "sasl.password": "pw"}


def test_a_key_password_comes_only_from_the_environment_and_is_never_shown():
    environment = {ENVIRONMENT["ssl_key_password"]: "key-secret"}
    security = KafkaSecurity.from_environment(environment, protocol="SSL", ssl_key="/k.pem",
                                              ssl_key_password="from-argv")
    assert security.ssl_key_password == "key-secret" and "key-secret" not in repr(security)
    assert security.client_config()["ssl.key.password"] == "key-secret"


def test_tls_files_are_handed_to_clients_only_over_a_tls_protocol():
    files = {"ssl_ca": "/ca.pem", "ssl_cert": "/cert.pem", "ssl_key": "/key.pem"}
    plain = KafkaSecurity(protocol="SASL_PLAINTEXT", sasl_username="u", sasl_password="p", **files).client_config()
    assert not any(key.startswith("ssl.") for key in plain)
    encrypted = KafkaSecurity(protocol="SSL", **files).client_config()
    assert (encrypted["ssl.ca.location"], encrypted["ssl.certificate.location"], encrypted["ssl.key.location"]) == \
        ("/ca.pem", "/cert.pem", "/key.pem")
