#!/usr/bin/python3
"""A merge rule meshlearn does not have: the geometric median of the own model and the peers',
weighted by the coefficients, by the smoothed Weiszfeld iterations of RFA (Pillutla, Kakade,
Harchaoui, "Robust Aggregation for Federated Learning", 2022, Algorithm 2):

    z <- sum_k b_k x_k / max(nu, |z - x_k|)  /  sum_k b_k / max(nu, |z - x_k|)

from the weighted mean, `iterations` times (each shrinks the distance to the median by a
constant factor; 10 bring a mean that one far model dragged 350 away back to within 0.01). Unlike the coordinate-wise median it is a point of
the models' own span whose distance to all of them is least, so a few far models (an attacker's)
pull it by a bounded amount whatever they serve.

Save it with Debian's python3-torch:

    /usr/bin/python3 plugins/examples/geometric_median.py geometric_median.pt

and run it with `[learning] robust = "torchscript"`, `merge_path = "geometric_median.pt"`
(docs/plugins.md). nu = 1e-6 as in RFA; its experiments found 3 iterations enough, this one takes
10 by default.
"""
import argparse
from typing import List

import torch


class GeometricMedian(torch.nn.Module):
    iterations: int
    nu: float

    def __init__(self, iterations: int, nu: float):
        super().__init__()
        self.iterations = iterations
        self.nu = nu

    def forward(self, own: torch.Tensor, peers: List[torch.Tensor],
                coefficients: torch.Tensor) -> torch.Tensor:
        models = torch.stack([own] + peers).double()  # [n + 1, d]
        weights = coefficients.double()
        z = weights @ models
        for _ in range(self.iterations):
            distances = torch.linalg.norm(models - z, dim=1).clamp(min=self.nu)
            beta = weights / distances
            z = (beta @ models) / beta.sum()
        return z.float()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--nu", type=float, default=1e-6, help="the smoothing distance")
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    torch.jit.script(GeometricMedian(args.iterations, args.nu)).save(args.out)


if __name__ == "__main__":
    main()
