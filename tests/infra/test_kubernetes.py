"""The Kubernetes manifests validate against the Kubernetes API schemas (kubernetes-validate, from PyPI), the agent
runs unprivileged with the host's view, and the settings they carry are settings Reveal accepts."""

import tomllib
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from reveal.cli import build_parser, configurable_commands
from reveal.cli.config import convert, file_values, options_of

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "infra" / "k8s"
KUBERNETES_VERSION = "1.31.0"
NODE_PATHS = frozenset({"procfs", "sysfs", "spool_dir"})
DOCUMENTS = [document for path in sorted(K8S.glob("*.yaml")) for document in yaml.safe_load_all(path.read_text())
             if document and document["kind"] != "Kustomization"]


def resource(kind: str, name: str) -> dict:
    return next(d for d in DOCUMENTS if d["kind"] == kind and d["metadata"]["name"] == name)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: f"{d['kind']}/{d['metadata']['name']}")
def test_each_manifest_validates_against_the_kubernetes_schema(document):
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_the_kustomization_lists_every_manifest():
    listed = set(yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"])
    assert listed == {path.name for path in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_the_agent_sees_the_host_read_only_with_perfmon_and_no_privilege():
    spec = resource("DaemonSet", "reveal-agent")["spec"]["template"]["spec"]
    assert spec["hostPID"] and spec["hostNetwork"]
    container = spec["containers"][0]
    security = container["securityContext"]
    assert security["privileged"] is False and security["capabilities"]["add"] == ["PERFMON"]
    assert security["capabilities"]["drop"] == ["ALL"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/host/proc"]["readOnly"] and mounts["/host/sys"]["readOnly"]
    assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]


def test_the_settings_file_holds_only_options_reveal_accepts():
    parser = build_parser()
    commands = configurable_commands(parser)
    text = resource("ConfigMap", "reveal-config")["data"]["reveal.toml"]
    document = tomllib.loads(text)
    for command in ("agent", "worker"):
        assert command in document
        values = file_values(document, command, commands, "reveal.toml")
        actions = options_of(commands[command])
        assert values, command
        for dest, value in values.items():
            if dest in NODE_PATHS:  # paths inside the pod: checked there, on start
                assert isinstance(value, str) and value.startswith("/"), dest
                continue
            convert(actions[dest], value, f"reveal.toml [{command}] {dest}", from_text=False)


def test_the_pods_flags_come_from_variables_the_config_map_defines():
    defined = set(resource("ConfigMap", "reveal-env")["data"]) | {"NODE_NAME"}
    for kind, name in (("DaemonSet", "reveal-agent"), ("Deployment", "reveal-worker")):
        container = resource(kind, name)["spec"]["template"]["spec"]["containers"][0]
        used = {arg[2:-1] for arg in container["args"] if arg.startswith("$(")}
        assert used and used <= defined, (name, used - defined)
