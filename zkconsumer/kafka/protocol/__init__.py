"""The Kafka protocol without I/O: what to send and what the answers mean, told the time by the
caller, so every decision is tested without a socket."""
