"""One collector per telemetry source; each reads an injected root and returns channel → value for one instant."""
