"""Connections to brokers: framing, TLS and the SASL login driven over a socket."""
