#!/usr/bin/python3
"""Writes the EMD fixtures of tests/similarity/emd_test.cc: point clouds and POT's ot.emd2 values.

Run once, from the repository root, with Debian's python3-pot:

    /usr/bin/python3 tests/similarity/make_emd_fixtures.py

For each case it writes tests/similarity/testdata/emd_<name>.f32 (set a then set b, float32
little-endian, row-major) and one line "<name> <n_a> <n_b> <d> <W>" of emd_expected.txt, where W is
ot.emd2 with uniform weights on the cosine cost 1 - cos(a_i, b_j) computed in float64 from the
float32 values (DESIGN.md "EMD embedding exchange"; the reference of DESIGN.md "Build and
dependencies"). The data is stored, not regenerated, because numpy's and C++'s generators differ.
"""
import os

import numpy as np
import ot

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")

# name, n_a, n_b, d, shift of b's mean, noise of b around a (None: independent draws;
# "repeat": both sets are 6 random points repeated 10 times)
CASES = [
    ("tiny", 3, 2, 2, 0.0, None),
    ("small_equal", 8, 8, 5, 0.5, None),
    ("unequal", 37, 23, 16, 0.3, None),
    ("unequal_wide", 100, 64, 115, 0.2, None),
    ("close", 64, 64, 32, 0.0, 0.05),
    ("n512_d115", 512, 512, 115, 0.3, None),
    # Equal sizes take the exact solver's assignment path (similarity/emd.h): the exchange's
    # validation-set size, and a cloud of repeated points, whose costs tie by the hundred.
    ("equal_n100_d115", 100, 100, 115, 0.1, None),
    ("equal_repeated", 60, 60, 4, 0.0, "repeat"),
    # One size divides the other: the capacitated assignment, either way round (the exchange's
    # 500 training rows against 100 validation rows of 58 projected columns).
    ("divisible_500_100", 500, 100, 58, 0.1, None),
    ("divisible_100_300", 100, 300, 16, 0.2, None),
]


def cosine_cost(a, b):
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    a64 /= np.linalg.norm(a64, axis=1, keepdims=True)
    b64 /= np.linalg.norm(b64, axis=1, keepdims=True)
    return 1.0 - a64 @ b64.T


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261122)
    lines = []
    for name, n_a, n_b, d, shift, noise in CASES:
        a = rng.standard_normal((n_a, d)).astype(np.float32)
        if noise == "repeat":
            # Six distinct points on each side, each repeated ten times.
            a = np.repeat(rng.standard_normal((n_a // 10, d)), 10, axis=0).astype(np.float32)
            b = np.repeat(rng.standard_normal((n_b // 10, d)), 10, axis=0).astype(np.float32)
        elif noise is None:
            b = (rng.standard_normal((n_b, d)) + shift).astype(np.float32)
        else:
            b = (a[:n_b] + noise * rng.standard_normal((n_b, d))).astype(np.float32)
        cost = cosine_cost(a, b)
        w, log = ot.emd2(np.full(n_a, 1.0 / n_a), np.full(n_b, 1.0 / n_b), cost,
                         numItermax=10**8, log=True)
        assert log["warning"] is None, log["warning"]
        with open(os.path.join(OUT, "emd_%s.f32" % name), "wb") as f:
            f.write(a.astype("<f4").tobytes())
            f.write(b.astype("<f4").tobytes())
        lines.append("%s %d %d %d %.17g" % (name, n_a, n_b, d, float(w)))
    with open(os.path.join(OUT, "emd_expected.txt"), "w") as f:
        f.write("# name n_a n_b d W (POT %s ot.emd2, cosine cost, uniform weights)\n"
                % ot.__version__)
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
