"""The statistics the judge uses, held to scipy's reference values (no Spark)."""

from __future__ import annotations

from shadow_backfill.validate.stats import PELZ_GOOD_FROM, kstwo_sf


def test_the_fast_ks_pvalue_is_scipy_s_to_within_5e_8() -> None:
    """`kstwo_sf` against scipy's `kstwo.sf` over the range of d that decides a verdict, on
    both sides of where the fast series takes over, and where scipy's own shortcuts apply."""
    from scipy.stats import kstwo

    for n in (PELZ_GOOD_FROM - 1, PELZ_GOOD_FROM, 5_000, 22_500):
        for z in (0.0, 0.02, 0.3, 0.39, 0.6, 0.9, 1.2, 1.45, 1.6, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0):
            d = z / n**0.5
            fast, exact = kstwo_sf(d, n), float(kstwo.sf(d, n))
            assert abs(fast - exact) < 5e-8 and abs(fast - exact) <= 2e-3 * exact, (n, z)
    assert kstwo_sf(1.0, 5_000) == 0.0 and kstwo_sf(0.0, 5_000) == 1.0
