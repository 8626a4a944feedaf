"""Statistics on synthetic series with known answers."""

import numpy as np
import pytest

from kerasbench import rule, stats

KIB, MIB = 1024, 1024**2


def test_known_slope_recovered_within_5_percent():
    rng = np.random.default_rng(0)
    i = np.arange(60)
    series = 500 * MIB + 256 * KIB * i + rng.normal(0, 200 * KIB, 60)
    fit = stats.fit_growth(series)
    assert abs(fit.slope - 256 * KIB) / (256 * KIB) < 0.05
    assert fit.low < 256 * KIB < fit.high
    assert rule.verdict(fit, margin=64 * KIB) == "grows"


def test_small_slope_recovered_in_quiet_series():
    rng = np.random.default_rng(1)
    series = 100 * MIB + 4 * KIB * np.arange(60) + rng.normal(0, 4 * KIB, 60)
    fit = stats.fit_growth(series)
    assert abs(fit.slope - 4 * KIB) / (4 * KIB) < 0.05


def test_gaussian_noise_is_not_called_grows():
    rng = np.random.default_rng(2)
    verdicts = [rule.verdict(stats.fit_growth(500 * MIB + rng.normal(0, 1 * MIB, 30))) for _ in range(200)]
    assert verdicts.count("grows") <= 10  # <= 5 %
    assert verdicts.count("flat") > 100


def test_glibc_like_sawtooth_is_not_called_grows():
    # RSS climbs 600 KiB an iteration for 5 iterations, then the allocator hands it back.
    rng = np.random.default_rng(3)
    for phase in range(6):
        i = np.arange(60) + phase
        series = 500 * MIB + 600 * KIB * (i % 6) + rng.normal(0, 20 * KIB, 60)
        assert rule.verdict(stats.fit_growth(series)) != "grows"


def test_page_staircase_is_significant_but_below_the_margin():
    # A trend test alone calls this a leak; the effect-size floor does not.
    series = 500 * MIB + 4096 * (np.arange(80) // 2)
    fit = stats.fit_growth(series)
    assert fit.p_trend < 1e-6
    assert rule.verdict(fit, margin=64 * KIB) == "flat"


def test_verdict_follows_the_margin():
    fit = stats.fit_growth(500 * MIB + 32 * KIB * np.arange(40))
    assert rule.verdict(fit, margin=16 * KIB) == "grows"
    assert rule.verdict(fit, margin=64 * KIB) == "flat"


def test_wide_interval_is_inconclusive():
    rng = np.random.default_rng(4)
    series = 500 * MIB + 64 * KIB * np.arange(8) + rng.normal(0, 2 * MIB, 8)
    assert rule.verdict(stats.fit_growth(series), margin=64 * KIB) == "inconclusive"


@pytest.mark.parametrize("series", [[], [1.0], [1.0, 2.0], [1.0, float("nan"), 3.0, 4.0]])
def test_degenerate_series_are_inconclusive(series):
    assert rule.verdict(stats.fit_growth(series)) == "inconclusive"


def test_constant_series_is_flat():
    fit = stats.fit_growth([7.0] * 20)
    assert fit.slope == 0 and fit.p_trend == 1.0
    assert rule.verdict(fit) == "flat"


def test_combine_needs_agreement():
    grows = rule.judge(256 * KIB * np.arange(20.0))
    flat = rule.judge(np.zeros(20))
    assert rule.combine([grows, grows])[1] == "grows"
    combined, verdict, shape, why = rule.combine([grows, flat])
    assert verdict == "inconclusive"
    assert why == "repeats disagree (grows ×1, flat ×1)"  # repeats that disagree say so
    assert combined.low <= 0 and combined.high >= 256 * KIB
    assert rule.combine([])[1] == "inconclusive"


def test_interval_covers_the_truth_about_95_percent_of_the_time():
    rng = np.random.default_rng(5)
    covered = 0
    for _ in range(200):
        fit = stats.fit_growth(1000 * np.arange(40) + rng.normal(0, 5000, 40))
        covered += fit.low <= 1000 <= fit.high
    assert covered >= 180


def test_long_series_fit_in_bounded_memory():
    """100,000 iterations: the fit stays under 100 MB (exact Theil-Sen would need ~250 GB) and finds the slope."""
    import tracemalloc

    rng = np.random.default_rng(7)
    n = 100_000
    series = 500 * MIB + 4 * KIB * np.arange(n) + rng.normal(0, 256 * KIB, n)
    tracemalloc.start()
    fit = stats.fit_growth(series)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100 * MIB, peak
    assert fit.n == n
    assert abs(fit.slope - 4 * KIB) < 0.01 * 4 * KIB
    assert fit.low < 4 * KIB < fit.high
    assert rule.verdict(fit, margin=2 * KIB) == "grows"


def test_series_up_to_the_bin_limit_are_fitted_exactly():
    from scipy.stats import theilslopes

    rng = np.random.default_rng(8)
    series = 1000 * np.arange(stats.MAX_POINTS) + rng.normal(0, 5000, stats.MAX_POINTS)
    slope, _, low, high = theilslopes(series, np.arange(stats.MAX_POINTS, dtype=float), alpha=0.95)
    fit = stats.fit_growth(series)
    assert (fit.slope, fit.low, fit.high) == (slope, low, high)


@pytest.mark.parametrize("n", [stats.MAX_POINTS + 1, 1837, 2 * stats.MAX_POINTS, 4091])
def test_a_longer_series_is_fitted_on_its_bins_medians(n):
    """Past MAX_POINTS readings the fit takes the median of each of MAX_POINTS equal bins (of two lengths where n is
    not a multiple), x at each bin's centre: the medians as one per bin gives them."""
    rng = np.random.default_rng(n)
    y = np.cumsum(rng.normal(0, 1000, n)) + rng.integers(0, 3, n) * 4096.0
    x, medians = stats._binned(y)
    edges = np.linspace(0, n, stats.MAX_POINTS + 1).astype(int)
    assert len(set(np.diff(edges))) == (1 if n % stats.MAX_POINTS == 0 else 2)
    assert np.array_equal(medians, [np.median(y[a:b]) for a, b in zip(edges[:-1], edges[1:])])
    assert np.array_equal(x, (edges[:-1] + edges[1:] - 1) / 2.0)


# A sweep's heap on TF 2.21.0 (default profile, 23 iterations): +7.2 MiB an iteration, the GC taking back ~30 MiB
# every 9; the reference measured +3391 KiB/iteration over 150 iterations: a leak.
SWEEP_HEAP_DIFFS_KIB = [7236, 7571, 7222, 7349, 7225, 7225, 7310, -30679, 7323, 7224, 7331, 7147, 7221, 7237, 7314,
                        7132, -30235, 7138, 7350, 7239, 7444, 7222]


def test_a_sawtooth_leak_is_a_leak_whatever_the_phase_of_its_teeth():
    """The half whose tooth falls late reads +7225 KiB/iteration, the other +3296 (the window: +3456): a phase of
    the GC's teeth, not a slowing. The late half keeps 3/4 of the window's rate: grows (protocol 4: not steady)."""
    heap = np.r_[600 * MIB, 600 * MIB + np.cumsum(np.array(SWEEP_HEAP_DIFFS_KIB) * KIB)]
    judged = rule.judge(heap, 128 * KIB, 0, 0.05 / 6)
    assert (judged.verdict, judged.shape) == ("grows", "grows"), judged.why
    assert 3300 * KIB < judged.fit.slope < 3600 * KIB


# The same loop at the quick profile (sweep × rebuild_no_clear, TF 2.21.0, 10 iterations in its 6 s): one tooth,
# in the late half. MiB over the first reading.
SWEEP_QUICK_HEAP_MIB = [0.0, 7.1, 14.4, 21.5, 28.8, 35.8, 43.1, 50.2, 23.9, 31.1]
SWEEP_QUICK_RSS_MIB = [0.0, 8.7, 17.4, 26.0, 34.5, 42.7, 51.6, 60.0, 40.2, 42.3]


def test_a_slow_pair_with_one_tooth_grows_when_its_halves_are_compared_between_the_teeth():
    """Read plainly, the half holding the tooth falls (+7.1, then -2.6 MiB/iteration: "not steady"); between the
    GC's teeth (found in the heap, given for RSS too) both halves rise +7 MiB/iteration, and the window's own fit
    (CI above zero) says it grows net: a leak, as the reference's 150 iterations say (+3391 KiB/iteration)."""
    heap = 600 * MIB + np.array(SWEEP_QUICK_HEAP_MIB) * MIB
    rss = 900 * MIB + np.array(SWEEP_QUICK_RSS_MIB) * MIB
    teeth = stats.gc_teeth(heap)
    assert teeth.tolist() == [False] * 7 + [True, False]  # the fall from 50.2 to 23.9 MiB
    level, floor = 0.05 / 3, 128 * KIB
    for series in (heap, rss):
        assert rule.judge(series, floor, 0, level).verdict == "inconclusive"  # the plain halves: not steady
        judged = rule.judge(series, floor, 0, level, teeth)
        assert judged.verdict == "grows", judged.why
    assert stats.gc_teeth(rss).tolist() == [False] * 9  # RSS's own fall (-19.8 MiB) is no tooth at 3× its median


def test_teeth_change_only_halves_that_cannot_net_them_out():
    """Between the teeth a flat sawtooth still rises, but the window's own fit decides whether it grows net: it
    does not. Halves that each span two or more teeth are judged by their plain fits (which net the teeth out) as
    without teeth; teeth of another length than the series' are ignored."""
    i = np.arange(40)
    flat = 100 * MIB + 250 * KIB * (i % 6)  # sweep × reuse_model's heap: +250 KiB, back every 6 iterations
    assert rule.judge(flat, 32 * KIB, 0, 0.05 / 8, stats.gc_teeth(flat)).verdict == "flat"
    diffs = np.array(SWEEP_HEAP_DIFFS_KIB * 3) * KIB  # 66 iterations, 6 teeth: 3 in each half
    long = np.r_[600 * MIB, 600 * MIB + np.cumsum(diffs)]
    teeth = stats.gc_teeth(long)
    assert teeth.sum() == 6
    assert rule.judge(long, 128 * KIB, 0, 0.05 / 6, teeth) == rule.judge(long, 128 * KIB, 0, 0.05 / 6)
    heap = 600 * MIB + np.array(SWEEP_QUICK_HEAP_MIB) * MIB
    assert rule.judge(heap, 128 * KIB, 0, 0.05 / 3, teeth[:3]).verdict == "inconclusive"
    n = stats.MAX_POINTS + 1  # a long half with one tooth: the median difference off it, not n² pairs
    rising = 100 * MIB + 4 * KIB * np.arange(n) - 64 * MIB * (np.arange(n) >= n // 2)
    assert stats.between_teeth(rising, stats.gc_teeth(rising), 0.0) == 4 * KIB


def test_a_heap_that_slows_to_under_three_quarters_of_its_window_is_not_a_leak():
    """A curve that still settles (early +1112, late +346, window +539 B/iteration, as batch_stream's heap over its
    first 772 iterations on TF 2.12.1; flat over 3,000) stays undecided: the late half under half the early half's
    rate and under 3/4 of the window's."""
    t = np.arange(440, dtype=float)
    heap = 100 * MIB + 2000 * 440 * (1 - np.exp(-t / 300)) + np.random.default_rng(3).normal(0, 50, t.size)
    judged = rule.judge(heap, 256, 0, 0.05 / 17)
    first, second = stats.fit_growth(heap[:220]).slope, stats.fit_growth(heap[220:]).slope
    whole = stats.fit_growth(heap).slope
    assert second * rule.series.DECELERATION < first and second < stats.LATE_OF_WINDOW * whole
    assert judged.verdict == "inconclusive" and judged.shape == "settling", judged.why


def test_a_margin_is_judged_by_the_whole_widened_interval():
    """A margin (max_growth, --floor-kib, or the series' default): `grows` only when the interval, widened by the
    count's resolution, is at or above it; `flat` only when below; across it `inconclusive`, with the count that
    would decide it."""
    rng = np.random.default_rng(7)
    base = 100 * 1024 * 1024
    steady = lambda rate, noise: base + rate * np.arange(60) + rng.normal(0, noise, 60)  # noqa: E731
    margin = 16 * 1024
    above = rule.judge(steady(17.4 * 1024, 200), margin)  # the body keeping 16 KiB a call, +1.4
    below = rule.judge(steady(1.35 * 1024, 200), margin)  # the flat predict body
    across = rule.judge(steady(16 * 1024, 60 * 1024), margin)
    assert (above.verdict, below.verdict, across.verdict) == ("grows", "flat", "inconclusive")
    assert above.fit.low >= margin and below.fit.high < margin and across.fit.low < margin <= across.fit.high
    assert "across the 16 KiB margin" in across.why, across.why
    # the resolution widens the interval: 1 KiB over the margin, at a resolution of 2 KiB, cannot be told apart
    # from it; at a resolution of 0.5 KiB it can
    near = steady(17 * 1024, 50)
    assert rule.judge(near, margin, 2048.0).verdict == "inconclusive"
    assert rule.judge(near, margin, 512.0).verdict == "grows"
    assert rule.judge(steady(15 * 1024, 50), margin, 512.0).verdict == "flat"


def test_an_undecided_slope_says_the_count_that_would_decide_it():
    """+1.4 KiB/iteration against a 4 KiB margin, at a resolution that halves with each doubling of the count:
    undecided at 12 iterations, with the count that resolves it; which is decided when measured that long."""
    rng = np.random.default_rng(8)
    series = 100 * 1024 * 1024 + 1.4 * 1024 * np.arange(400) + rng.normal(0, 256, 400)
    resolution = lambda n: (16 * 1024 * 8 / n, "halves with each doubling")  # noqa: E731
    short = rule.judge(series[:12], 4096, resolution)
    assert short.verdict == "inconclusive" and short.needed is not None, short
    assert f"needs about {short.needed} iterations" in short.why
    assert rule.judge(series[:short.needed], 4096, resolution).verdict == "flat"
    # a slope on a resolution that never gets finer than its distance to the margin: no count decides it
    stuck = rule.judge(series[:60], 2048, 1024.0)
    assert stuck.verdict == "inconclusive" and stuck.needed is None and "within the resolution" in stuck.why


# ---------------------------------------------------------------- a middle placed on the scale of a change


MIB = 1024**2


def test_a_bridge_3_percent_of_a_2_6_gb_change_from_the_good_end_is_the_good_end():
    """attribute 2.15.1 -> 2.16.1 (cnn_forward, peak_over_setup): the bridge -83.9 MiB from the good end, many times
    compare's noise (5.9 MiB), on a change of +2.6 GB: like the good end, with where it lies said."""
    good, bad = (396.1 * MIB, 4.2 * MIB), (2995.8 * MIB, 20 * MIB)
    where = rule.place(good, bad, (good[0] - 83.9 * MIB, 4.2 * MIB))
    assert where.kind == "good" and where.position == pytest.approx(-0.0323, abs=1e-3)
    assert where.low < where.position < where.high < 0
    assert where.text("2.15.1", "2.16.1") == "like 2.15.1 (-3.2 % of the way to 2.16.1, ±0.5 %)"


@pytest.mark.parametrize("middle, noise, kind, text", [
    (50, 1, "between", "between A and B (50 % of the way, ±2 %)"),
    (98, 2, "bad", "like B (98 % of the way from A, ±4 %)"),
    (180, 2, "bad", "like B (beyond it: 180 % of the way from A, ±6 %)"),  # the change, larger: on the bad side
    (-60, 2, "good", "like A (beyond it: -60 % of the way to B, ±5 %)"),
    (50, 30, "undecided", "neither like A nor like B for certain (50 % of the way from A to B, ±59 %"),
    (20, 5, "undecided", "neither like A nor like B for certain (20 % of the way from A to B, ±10 %"),  # 10-30 %
])
def test_a_middle_is_like_an_end_only_when_its_whole_interval_is_near_it(middle, noise, kind, text):
    where = rule.place((0.0, 1.0), (100.0, 1.0), (float(middle), float(noise)))
    assert where.kind == kind and where.text("A", "B").startswith(text)


def test_the_position_interval_is_the_first_order_propagation_of_each_sides_uncertainty():
    # var = (s_m² + (1 - p)² s_g² + p² s_b²) / (b - g)²: p = 0.4, (9 + 0.36 · 16 + 0.16 · 25) / 100² → sd 0.0433
    where = rule.place((10.0, 4.0), (110.0, 5.0), (50.0, 3.0))
    assert where.position == pytest.approx(0.4)
    assert (where.high - where.low) / 2 == pytest.approx(1.96 * (9 + 0.36 * 16 + 0.16 * 25) ** 0.5 / 100)


def test_ends_within_their_own_uncertainty_or_unknown_place_nothing():
    assert rule.place((0.0, 10.0), (20.0, 10.0), (0.0, 0.0)).kind == "undecided"  # 20 < 2 × 1.96 × 14.1
    assert "do not differ" in rule.place((0.0, 10.0), (20.0, 10.0), (0.0, 0.0)).text()
    assert rule.place((0.0, float("nan")), (100.0, 1.0), (0.0, 1.0)).kind == "undecided"


def _periodic(rates, period=120, seed=11, noise=2 * KIB):
    """A heap of varying inputs: per period `rates[k]` bytes/iteration (the first one TF's new traces)."""
    steps = np.concatenate([np.full(period, float(rate)) for rate in rates])
    return 100 * MIB + np.cumsum(steps) + np.random.default_rng(seed).normal(0, noise, steps.size)


def test_a_heap_still_settling_period_after_period_is_settling_not_a_leak():
    # TF 2.12.1's batch_stream × varying_batch_shapes (docs/reference): +550 KiB/iteration while 120 batch sizes
    # trace, +16 through the second period, +2 through the third; a reference 1,837 iterations long reads +0.3, flat.
    heap = _periodic([550 * KIB, 16 * KIB, 2 * KIB, 2 * KIB])[:3 * 120 + 5]
    assert rule.judge(heap, 800.0).verdict == "grows"  # blind to the period: the halves' test passes
    judged = rule.judge(heap, 800.0, period=120)
    assert (judged.verdict, judged.shape) == ("inconclusive", "settling")
    assert "between the last two periods of its 120 inputs" in judged.why


@pytest.mark.parametrize("seed", range(5))
def test_a_leak_over_varying_inputs_still_grows_period_after_period(seed):
    heap = _periodic([550 * KIB, 4 * KIB, 4 * KIB, 4 * KIB], seed=seed)[:3 * 120 + 5]
    judged = rule.judge(heap, 800.0, period=120)
    assert (judged.verdict, judged.shape) == ("grows", "grows")
    assert judged.fit.low <= 4 * KIB <= judged.fit.high * 1.05


def test_under_three_periods_the_period_cannot_be_judged():
    heap = _periodic([550 * KIB, 16 * KIB, 2 * KIB])[:2 * 120 + 60]
    assert rule.judge(heap, 800.0, period=120).verdict == rule.judge(heap, 800.0).verdict
