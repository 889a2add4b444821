#!/usr/bin/python3
"""Plug-ins that misbehave on a fixed schedule: cos_weights and FedAvg, but every k-th call fails,
in turn with NaN, a result of the wrong size and an exception (calls k, 2k, 3k, 4k, ... fail with
NaN, the wrong size, an exception, NaN, ...). They show what a node does with a plug-in that
fails at run time (docs/plugins.md "Debug it"), and the fault fuzzer draws them
(docs/development.md "The fault fuzzer"). Save them with Debian's python3-torch:

    /usr/bin/python3 plugins/examples/misbehaving.py --point metric --every 4 misbehaving_metric.pt
    /usr/bin/python3 plugins/examples/misbehaving.py --point merge --every 3 misbehaving_merge.pt

and run one as any metric or merge rule (docs/plugins.md). The count is the module's own, one per
node: the load's probes are its first calls (a metric's one, a merge's two), so k must be larger
than that for the load to pass. A node's calls come one at a time in an order its run fixes, so in
the simulator the same calls fail in every run.
"""
import argparse
from typing import List

import torch


class CountedFaults(torch.nn.Module):
    """Counts its calls: every `every`-th is a fault, 1 (NaN), 2 (wrong size), 3 (exception) in
    turn; the others 0."""

    every: int
    calls: int

    def __init__(self, every: int):
        super().__init__()
        self.every = every
        self.calls = 0

    def next_fault(self) -> int:
        self.calls += 1
        if self.calls % self.every != 0:
            return 0
        return (self.calls // self.every - 1) % 3 + 1


class MisbehavingMetric(CountedFaults):
    """cos(w_i, w_j), but every `every`-th call fails (NaN, two values, an exception, ...)."""

    def forward(self, own: torch.Tensor, peer: torch.Tensor, initial: torch.Tensor) -> torch.Tensor:
        fault = self.next_fault()
        if fault == 1:
            return torch.tensor(float("nan"))
        if fault == 2:
            return torch.zeros(2)
        if fault == 3:
            raise RuntimeError("misbehaving metric: call " + str(self.calls) + " fails")
        return torch.dot(own, peer) / (torch.linalg.norm(own) * torch.linalg.norm(peer))


class MisbehavingMerge(CountedFaults):
    """The weighted average sum_k c_k x_k, but every `every`-th call fails (NaN, a model one float
    short, an exception, ...)."""

    def forward(self, own: torch.Tensor, peers: List[torch.Tensor],
                coefficients: torch.Tensor) -> torch.Tensor:
        fault = self.next_fault()
        c = coefficients.to(own.dtype)
        merged = c[0] * own
        for j, peer in enumerate(peers):
            merged = merged + c[j + 1] * peer
        if fault == 1:
            return merged * float("nan")
        if fault == 2:
            return merged[:-1]
        if fault == 3:
            raise RuntimeError("misbehaving merge: call " + str(self.calls) + " fails")
        return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=["metric", "merge"], required=True)
    parser.add_argument("--every", type=int, required=True, help="every k-th call fails")
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    module = MisbehavingMetric(args.every) if args.point == "metric" else MisbehavingMerge(args.every)
    torch.jit.script(module).save(args.out)


if __name__ == "__main__":
    main()
