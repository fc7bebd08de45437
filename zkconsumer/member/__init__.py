"""A group member: registration, rebalancing, streams and the connector that ties them together."""
