"""Kafka's record formats read from untrusted bytes: message sets v0/v1, record batches v2,
their compression, and the compiled decoder that turns them into columns. Pure: bytes in,
records or `CorruptMessageError` out, in bounded memory."""
