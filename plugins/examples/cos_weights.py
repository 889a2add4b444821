#!/usr/bin/python3
"""The built-in `cos_weights` metric as a plug-in: s_ij = w_i . w_j / (|w_i| |w_j|).

Save it with Debian's python3-torch (the same release as libtorch-dev, so the node loads it):

    /usr/bin/python3 plugins/examples/cos_weights.py cos_weights.pt
    /usr/bin/python3 plugins/examples/cos_weights.py --order builtin cos_weights_builtin_order.pt

and run it with `[learning] metric = "torchscript"`, `metric_path = "cos_weights.pt"`
(docs/plugins.md).

--order simple (the default) is the formula as one would write it: three float32 dot products.
Its score differs from the built-in's in the last digits (about 1e-7 of the score: both sum in
float32, in different orders). --order builtin sums in the built-in's order
(similarity/vector_kernels.cc: float products in blocks of 512, each block's 16 lanes summed in
float, the blocks in float64), so it gives the built-in's score to the last bit, at a cost.
"""
import argparse
import math

import torch


class CosWeights(torch.nn.Module):
    """cos(w_i, w_j) from three float32 dot products."""

    symmetric: bool

    def __init__(self):
        super().__init__()
        self.symmetric = True

    def forward(self, own: torch.Tensor, peer: torch.Tensor, initial: torch.Tensor) -> float:
        dot = float(torch.dot(own, peer))
        norms = float(torch.dot(own, own)) * float(torch.dot(peer, peer))
        if norms == 0.0:
            raise ValueError("cos_weights: a zero-norm weight vector has no direction")
        return max(-1.0, min(1.0, dot / math.sqrt(norms)))


def lane_sums(terms: torch.Tensor, steps: int) -> torch.Tensor:
    """The built-in kernel's float32 sums of `terms` [3, blocks, steps * 16]: 16 lanes, each
    summed over the steps in order, then the four groups of four lanes added in order."""
    rows = terms.reshape(3, terms.size(1), steps, 16)
    acc = rows[:, :, 0, :]
    for s in range(1, steps):
        acc = acc + rows[:, :, s, :]
    lanes = acc.reshape(3, terms.size(1), 4, 4)
    return ((lanes[:, :, 0, :] + lanes[:, :, 1, :]) + lanes[:, :, 2, :]) + lanes[:, :, 3, :]


class CosWeightsBuiltinOrder(torch.nn.Module):
    """cos(w_i, w_j) summed in the order of similarity/vector_kernels.cc's FusedDotAndNorms."""

    symmetric: bool

    def __init__(self):
        super().__init__()
        self.symmetric = True

    def forward(self, own: torch.Tensor, peer: torch.Tensor, initial: torch.Tensor) -> float:
        n = own.numel()
        terms = torch.stack([own * peer, own * own, peer * peer])  # float32 products
        full = (n // 512) * 512
        total = torch.zeros(3, dtype=torch.float64)
        if full > 0:
            lanes = lane_sums(terms[:, :full].reshape(3, full // 512, 512), 32).double()
            blocks = ((lanes[:, :, 0] + lanes[:, :, 1]) + lanes[:, :, 2]) + lanes[:, :, 3]
            total = torch.cumsum(blocks, 1)[:, -1]  # block after block, in float64
        rest = terms[:, full:]
        stepped = (rest.size(1) // 16) * 16
        if rest.size(1) > 0:
            tail = torch.zeros(3, dtype=torch.float32)
            for i in range(stepped, rest.size(1)):
                tail = tail + rest[:, i]
            block = tail.double()
            if stepped > 0:
                lanes = lane_sums(rest[:, :stepped].reshape(3, 1, stepped), stepped // 16)
                lanes = lanes.double()[:, 0, :]
                block = (((block + lanes[:, 0]) + lanes[:, 1]) + lanes[:, 2]) + lanes[:, 3]
            total = total + block
        if bool(total[1] == 0) or bool(total[2] == 0):
            raise ValueError("cos_weights: a zero-norm weight vector has no direction")
        cosine = float(total[0]) / (math.sqrt(float(total[1])) * math.sqrt(float(total[2])))
        return max(-1.0, min(1.0, cosine))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", choices=["simple", "builtin"], default="simple")
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    module = CosWeights() if args.order == "simple" else CosWeightsBuiltinOrder()
    torch.jit.script(module).save(args.out)


if __name__ == "__main__":
    main()
