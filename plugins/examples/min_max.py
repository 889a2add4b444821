#!/usr/bin/python3
"""An attack meshlearn does not have: min-max (Shejwalkar and Houmansadr, "Manipulating the
Byzantine: Optimizing Model Poisoning Attacks and Defenses for Federated Learning", NDSS 2021),
in the decentralized form a peer can mount. S is the attacker's own model w and the models it
fetched this round; it serves

    m = mean(S) + gamma * p,  p = -std(S)  (the "inverse standard deviation" direction),

with the largest gamma for which m is no farther from any model of S than the two farthest
models of S are from each other: far enough to pull a merge, near enough to pass a distance
filter. gamma is found by halving, from `gamma_max`. With nothing fetched (round 0) it serves w.

Save it with Debian's python3-torch:

    /usr/bin/python3 plugins/examples/min_max.py min_max.pt

and run it with `[attack] kind = "torchscript"`, `attack_path = "min_max.pt"` (docs/plugins.md).
"""
import argparse
from typing import List

import torch


class MinMax(torch.nn.Module):
    gamma_max: float
    steps: int

    def __init__(self, gamma_max: float, steps: int):
        super().__init__()
        self.gamma_max = gamma_max
        self.steps = steps

    def forward(self, own: torch.Tensor, fetched: List[torch.Tensor]) -> torch.Tensor:
        if len(fetched) == 0:
            return own.clone()
        models = torch.stack([own] + fetched)  # [n, d]
        mean = models.mean(0)
        direction = -models.std(0)
        limit = torch.cdist(models, models).max()
        gamma, step, best = self.gamma_max, self.gamma_max / 2, 0.0
        for _ in range(self.steps):
            served = mean + gamma * direction
            if bool(torch.linalg.norm(models - served, dim=1).max() <= limit):
                best = gamma
                gamma = gamma + step
            else:
                gamma = gamma - step
            step = step / 2
        return mean + best * direction


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gamma-max", type=float, default=10.0)
    parser.add_argument("--steps", type=int, default=12, help="halvings of the search")
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    torch.jit.script(MinMax(args.gamma_max, args.steps)).save(args.out)


if __name__ == "__main__":
    main()
