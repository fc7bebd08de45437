"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from zkconsumer.records import columns

# The unit tests run beside the cluster tests on a machine of two cores, where a property's
# example can wait on the CPU for longer than Hypothesis's 200 ms deadline, and its input
# generation for longer than its health check allows: neither says anything about the code, so
# the properties are judged by what they assert, not by how fast a busy machine runs them.
settings.register_profile("shared-cores", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.load_profile("shared-cores")


@pytest.fixture(params=["compiled", "aiokafka"])
def each_decoder(request, monkeypatch):
    """Runs a test with the compiled decoder and again with aiokafka's reader (the one used
    where the extension was not built), which must agree record for record."""
    if request.param == "compiled":
        if not columns.compiled():
            pytest.skip("the compiled decoder was not built")
    else:
        monkeypatch.setattr(columns, "_columns", None)
    return request.param
