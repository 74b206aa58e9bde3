"""scellis.gcpause: the collector is off inside a paused stage and as it was after it, however it ends."""

from __future__ import annotations

import gc

import pytest

from scellis.gcpause import paused


@paused
def collector_state() -> bool:
    return gc.isenabled()


@paused
def nested() -> tuple[bool, bool]:
    return collector_state(), gc.isenabled()


@paused
def failing() -> None:
    raise ValueError("bad input")


def test_off_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    assert collector_state() is False
    assert nested() == (False, False)
    assert gc.isenabled()


def test_back_on_after_an_error() -> None:
    with pytest.raises(ValueError, match="bad input"):
        failing()
    assert gc.isenabled()


def test_left_off_where_it_was_off() -> None:
    gc.disable()
    try:
        assert collector_state() is False
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_keeps_the_stage_name() -> None:
    assert collector_state.__name__ == "collector_state"
