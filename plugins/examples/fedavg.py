#!/usr/bin/python3
"""FedAvg's merge as a plug-in: the weighted average sum_k c_k x_k of the node's own model and
its peers', with the coefficients the node passes (FedAvg's n_j / sum n with
`[learning] aggregation = "fedavg"`, FedSim's with "fedsim", staleness weights included).

Save it with Debian's python3-torch:

    /usr/bin/python3 plugins/examples/fedavg.py fedavg.pt
    /usr/bin/python3 plugins/examples/fedavg.py --order builtin fedavg_builtin_order.pt

and run it with `[learning] robust = "torchscript"`, `merge_path = "fedavg.pt"` (docs/plugins.md).

--order simple (the default) adds the models in the order the node passes them (its own, then
the peers in the order they answered). --order builtin adds them in the built-in merge's
canonical order (training/aggregation.cc MergeWeighted: largest coefficient first, equal
coefficients by the models' bytes as memcmp compares them), each term c_k * x_k rounded to float32
and added in float32, as the built-in's loop does, so it gives the built-in's merged weights to
the last bit, at a cost: TorchScript cannot view a float tensor's bytes, so the comparison
rebuilds each float's IEEE-754 bit pattern from torch.frexp.
"""
import argparse
from typing import List

import torch


class FedAvg(torch.nn.Module):
    """sum_k c_k x_k, own first, then the peers in the order they answered."""

    def forward(self, own: torch.Tensor, peers: List[torch.Tensor],
                coefficients: torch.Tensor) -> torch.Tensor:
        c = coefficients.to(own.dtype)  # float32 coefficients, as the built-in merge uses
        merged = c[0] * own
        for j, peer in enumerate(peers):
            merged = merged + c[j + 1] * peer
        return merged


def float_bits(x: torch.Tensor) -> torch.Tensor:
    """The IEEE-754 bit patterns of the finite float32 values `x`, as int64 (exact: every step
    is exact in float64)."""
    magnitude = x.double().abs()
    mantissa, exponent = torch.frexp(magnitude)  # magnitude = mantissa * 2^exponent, mantissa in [0.5, 1)
    normal = magnitude >= 1.1754943508222875e-38  # 2^-126, the least normal float
    normal_bits = (exponent.long() + 126) * 8388608 + ((mantissa * 2 - 1) * 8388608.0).long()
    subnormal_bits = (magnitude * 7.1362384635298e+44).long()  # 2^149; zero included
    bits = torch.where(normal, normal_bits, subnormal_bits)
    return bits + torch.signbit(x).long() * 2147483648


def bytes_less(bits_a: torch.Tensor, bits_b: torch.Tensor) -> bool:
    """memcmp(a, b) < 0 over the little-endian bytes of two float32 vectors of one size, given
    their bit patterns (float_bits)."""
    differ = torch.nonzero(bits_a != bits_b)
    if differ.size(0) == 0:
        return False
    i = int(differ[0, 0])
    word_a, word_b = int(bits_a[i]), int(bits_b[i])
    for byte in range(4):  # the first byte in memory is the lowest
        byte_a, byte_b = (word_a >> (8 * byte)) & 255, (word_b >> (8 * byte)) & 255
        if byte_a != byte_b:
            return byte_a < byte_b
    return False


class FedAvgBuiltinOrder(torch.nn.Module):
    """sum_k c_k x_k in training/aggregation.cc's canonical order."""

    def forward(self, own: torch.Tensor, peers: List[torch.Tensor],
                coefficients: torch.Tensor) -> torch.Tensor:
        models = [own] + peers
        # The bytes decide only between equal coefficients: their bit patterns are rebuilt once
        # per model, and only when two coefficients are equal.
        bits: List[torch.Tensor] = []
        if torch.unique(coefficients).numel() < coefficients.numel():
            bits = [float_bits(m) for m in models]
        order: List[int] = []
        for k in range(len(models)):  # insertion sort by (coefficient descending, bytes)
            at = len(order)
            while at > 0:
                prev = order[at - 1]
                ck, cp = float(coefficients[k]), float(coefficients[prev])
                if ck > cp or (ck == cp and bytes_less(bits[k], bits[prev])):
                    at -= 1
                else:
                    break
            order.insert(at, k)
        c = coefficients.to(own.dtype)
        merged = c[order[0]] * models[order[0]]
        for k in order[1:]:
            merged = merged + c[k] * models[k]
        return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", choices=["simple", "builtin"], default="simple")
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    module = FedAvg() if args.order == "simple" else FedAvgBuiltinOrder()
    torch.jit.script(module).save(args.out)


if __name__ == "__main__":
    main()
