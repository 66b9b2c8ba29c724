"""How Reveal's Kafka clients authenticate: TLS and SASL settings, shared by the agent's producer, the worker's Faust
app and the admin and catalog clients.

Secrets (the SASL password, the TLS key's password) come from the environment only, never from the command line
where `ps` shows them, and never appear in a repr or a log line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# setting → environment variable; the CLI's options override the non-secret ones.
ENVIRONMENT = {"protocol": "REVEAL_KAFKA_SECURITY_PROTOCOL", "sasl_mechanism": "REVEAL_KAFKA_SASL_MECHANISM",
               "sasl_username": "REVEAL_KAFKA_SASL_USERNAME", "sasl_password": "REVEAL_KAFKA_SASL_PASSWORD",
               "ssl_ca": "REVEAL_KAFKA_SSL_CA", "ssl_cert": "REVEAL_KAFKA_SSL_CERT", "ssl_key": "REVEAL_KAFKA_SSL_KEY",
               "ssl_key_password": "REVEAL_KAFKA_SSL_KEY_PASSWORD"}
SECRETS = ("sasl_password", "ssl_key_password")


@dataclass(frozen=True)
class KafkaSecurity:
    """TLS and SASL for one deployment; the default is a plaintext broker without authentication."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "PLAIN"
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    ssl_ca: str = ""
    ssl_cert: str = ""
    ssl_key: str = ""
    ssl_key_password: str = field(default="", repr=False)

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"Kafka security protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if self.uses_sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(f"Kafka SASL mechanism {self.sasl_mechanism!r} is not one of "
                                 f"{', '.join(SASL_MECHANISMS)}")
            if not self.sasl_username or not self.sasl_password:
                raise ValueError(f"Kafka security protocol {self.protocol} needs a user name "
                                 f"({ENVIRONMENT['sasl_username']} or --kafka-sasl-username) and a password "
                                 f"({ENVIRONMENT['sasl_password']}, from the environment only)")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL")

    @property
    def uses_tls(self) -> bool:
        return self.protocol.endswith("SSL")

    @classmethod
    def from_environment(cls, environment: Mapping[str, str], **overrides: str) -> "KafkaSecurity":
        """Settings from REVEAL_KAFKA_* variables, with non-empty overrides (the CLI's options) taking precedence."""
        values = {name: environment.get(variable, "") for name, variable in ENVIRONMENT.items()}
        values.update({name: value for name, value in overrides.items() if value and name not in SECRETS})
        return cls(**{name: value for name, value in values.items() if value})

    def client_config(self) -> dict[str, str]:
        """librdkafka properties (confluent-kafka's producer, consumer and admin client)."""
        config = {"security.protocol": self.protocol}
        if self.uses_sasl:
            config.update({"sasl.mechanism": self.sasl_mechanism, "sasl.username": self.sasl_username,
                           "sasl.password": self.sasl_password})
        optional = {"ssl.ca.location": self.ssl_ca, "ssl.certificate.location": self.ssl_cert,
                    "ssl.key.location": self.ssl_key, "ssl.key.password": self.ssl_key_password}
        config.update({key: value for key, value in optional.items() if value and self.uses_tls})
        return config

    def faust_credentials(self):
        """The Faust (aiokafka) credentials object, or None for a plaintext broker."""
        import faust

        context = self._ssl_context() if self.uses_tls else None
        if self.uses_sasl:
            return faust.SASLCredentials(username=self.sasl_username, password=self.sasl_password,
                                         ssl_context=context, mechanism=self.sasl_mechanism)
        return faust.SSLCredentials(context) if context is not None else None

    def _ssl_context(self):
        import ssl

        context = ssl.create_default_context(cafile=self.ssl_ca or None)
        if self.ssl_cert:
            context.load_cert_chain(self.ssl_cert, self.ssl_key or None, self.ssl_key_password or None)
        return context
