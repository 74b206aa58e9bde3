"""scellis.gcpause: the collector is off inside a paused stage and as it was after it, however it ends; the
stages it pauses leave no cycles for it."""

from __future__ import annotations

import gc

import pytest

from scellis.examples import deep_chain
from scellis.gcpause import paused
from scellis.levels import Level
from scellis.lower import lower
from scellis.pipeline import compile_program
from scellis.plan import planned


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


def test_the_paused_stages_leave_no_cycles_behind() -> None:
    """What compile, lower and plan free, reference counting frees: the collector they pause finds nothing."""
    gc.collect()
    compiled = compile_program(deep_chain(40))
    assert gc.collect() == 0
    schedule = lower(compiled.step, Level.PROD)
    assert gc.collect() == 0
    planned(schedule)
    assert gc.collect() == 0
