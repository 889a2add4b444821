#!/usr/bin/python3
"""FedAvg's merge as a plug-in: the weighted average sum_k c_k x_k of the node's own model and
its peers', with the coefficients the node passes (FedAvg's n_j / sum n with
`[learning] aggregation = "fedavg"`, FedSim's with "fedsim", staleness weights included).

Save it with Debian's python3-torch:

    /usr/bin/python3 plugins/examples/fedavg.py fedavg.pt

and run it with `[learning] robust = "torchscript"`, `merge_path = "fedavg.pt"` (docs/plugins.md).
It is the built-in `robust = "none"` but for the order of the additions: the built-in adds the
models in a canonical order (largest coefficient first, then by content), this one in the order
the peers answered, so the two can differ in the last bit of a weight.
"""
import argparse
from typing import List

import torch


class FedAvg(torch.nn.Module):
    def forward(self, own: torch.Tensor, peers: List[torch.Tensor],
                coefficients: torch.Tensor) -> torch.Tensor:
        c = coefficients.to(own.dtype)  # float32 coefficients, as the built-in merge uses
        merged = c[0] * own
        for j, peer in enumerate(peers):
            merged = merged + c[j + 1] * peer
        return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the .pt file to write")
    torch.jit.script(FedAvg()).save(parser.parse_args().out)


if __name__ == "__main__":
    main()
