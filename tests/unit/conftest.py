"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest

from zkconsumer.records import columns


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
