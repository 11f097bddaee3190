"""Panes sync on one app-wide grid, so panes that stream at once change the screen together."""

from __future__ import annotations

import math

import pytest

from tui_agent.app.widgets.thread_pane import (
    BACKGROUND_HZ,
    SYNC_GRID_S,
    SYNC_SLACK_S,
    until_sync_tick,
)

TICK = SYNC_GRID_S


@pytest.mark.parametrize("now", [0.0, 12.3456, 1000.01, 86_400.5])
@pytest.mark.parametrize("delay", [-1.0, 0.0, 0.001, TICK / 3, TICK, 0.5])
def test_a_sync_lands_on_the_grid_no_sooner_than_asked(now: float, delay: float) -> None:
    wait = until_sync_tick(delay, now)
    ticks = (now + wait) / TICK
    assert math.isclose(ticks, round(ticks), abs_tol=1e-6)  # on the grid
    # never sooner than the pane's own rate allows (less the lateness forgiven), at most a
    # tick later
    assert wait >= max(delay - SYNC_SLACK_S, 0.0) - 1e-9
    assert wait < max(delay, 0.001) + TICK + 1e-9


def test_panes_sync_on_one_grid() -> None:
    """Four panes whose last syncs were at different moments, asking within one tick of each
    other, all sync at the same instant (one layout, one repaint for all of them)."""
    now = 500.0137
    due = {until_sync_tick(delay, now) + now for delay in (0.001, 0.013, 0.02, 0.031)}
    assert len({round(at, 9) for at in due}) == 1


def test_background_panes_sync_together_on_a_focused_tick() -> None:
    """Background panes whose last syncs ran a little after one tick (timers are late), and
    whose text comes at different moments, all sync at one instant a period on, a tick of the
    focused pane's grid too: one layout for every pane, and none slips a tick for its
    lateness."""
    period = 1.0 / BACKGROUND_HZ
    tick = 731.5
    together = set()
    for late, asked in ((0.001, 0.01), (0.004, 0.1), (0.012, 0.3), (0.018, 0.45)):
        now = tick + late + asked  # last synced at tick + late
        together.add(round(now + until_sync_tick(period - asked, now, tick=period), 6))
    assert together == {round(tick + period, 6)}
    (at,) = together
    assert math.isclose(at / TICK, round(at / TICK), abs_tol=1e-6)
