"""Helpers shared by the integration tests: the cluster under test and waiting on conditions."""
