"""Our own Kafka client, in two parts that never mix: `protocol` (requests and answers as bytes,
version negotiation, SASL and the fetch session, with no sockets and no clock of its own) and
`io` (connections, TLS, the framing of one channel), with the errors both raise."""
