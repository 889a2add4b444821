#!/usr/bin/python3
"""Writes the TorchScript plug-ins that tests/plugins refuses or drives into faults (run by the
build with Debian's python3-torch; none is committed):

    /usr/bin/python3 tests/plugins/make_fixtures.py OUT_DIR

Every file below is a plug-in that breaks one rule of plugins/script_*.h. The `flaky_*` ones pass
the probes at load and misbehave at run time on an input whose first weight is a sentinel:
123 returns NaN, 124 throws, 125 returns a result of the wrong size. The `every_third_*` ones
misbehave on every third call (the probes at load are the first calls, so they pass), for runs
of real nodes (tests/e2e/plugins_test.cc) in which no weight is a sentinel.
"""
import os
import sys
from typing import List

import torch

Tensor = torch.Tensor


class NoForward(torch.nn.Module):
    @torch.jit.export
    def score(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        return 0.0


class MetricTwoArguments(torch.nn.Module):
    def forward(self, own: Tensor, peer: Tensor) -> float:
        return float(torch.dot(own, peer))


class MetricReturnsAVector(torch.nn.Module):
    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> Tensor:
        return own[:3]


class MetricIntAttribute(torch.nn.Module):
    needs_own_loss: int

    def __init__(self):
        super().__init__()
        self.needs_own_loss = 1

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        return 0.0


class MetricReadsNothing(torch.nn.Module):
    needs_weights: bool

    def __init__(self):
        super().__init__()
        self.needs_weights = False

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        return 0.0


class MetricLossWithoutArgument(torch.nn.Module):
    needs_own_loss: bool

    def __init__(self):
        super().__init__()
        self.needs_own_loss = True

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        return 0.0


class MetricInverseLoss(torch.nn.Module):
    """The built-in inv_loss: 1 / (L + 1e-6) of the peer's weights on the node's own data."""

    needs_own_loss: bool
    needs_weights: bool

    def __init__(self):
        super().__init__()
        self.needs_own_loss = True
        self.needs_weights = False

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor, own_loss: float) -> float:
        return 1.0 / (own_loss + 1e-6)


class MetricCosGrad(torch.nn.Module):
    """cos(w_i - w0, w_j - w0): reads the initial weights."""

    needs_initial: bool

    def __init__(self):
        super().__init__()
        self.needs_initial = True

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        a = (own - initial).double()
        b = (peer - initial).double()
        return float(torch.dot(a, b) / (torch.linalg.norm(a) * torch.linalg.norm(b)))


class MetricWritesInput(torch.nn.Module):
    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        own.mul_(2.0)
        return 0.0


class MetricThrows(torch.nn.Module):
    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        raise RuntimeError("this metric always fails")


class MetricNaN(torch.nn.Module):
    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        return float("nan")


def sentinel(t: Tensor) -> int:
    return int(t[0]) if t.numel() > 0 and bool(t[0] == torch.round(t[0])) else 0


class MetricFlaky(torch.nn.Module):
    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> Tensor:
        s = sentinel(peer)
        if s == 123:
            return torch.tensor(float("nan"))
        if s == 124:
            raise RuntimeError("flaky metric: sentinel 124")
        if s == 125:
            return own[:2]
        return torch.dot(own, peer) / (torch.linalg.norm(own) * torch.linalg.norm(peer))


class MergeOneArgument(torch.nn.Module):
    def forward(self, own: Tensor) -> Tensor:
        return own


class MergeShortResult(torch.nn.Module):
    def forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor:
        return own[:-1].clone()


class MergeWritesInput(torch.nn.Module):
    def forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor:
        own.zero_()
        return own


class MergeFlaky(torch.nn.Module):
    def forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor:
        s = sentinel(peers[0])
        if s == 123:
            return own * float("nan")
        if s == 124:
            raise RuntimeError("flaky merge: sentinel 124")
        if s == 125:
            return own[:2].clone()
        merged = coefficients[0].float() * own
        for j, peer in enumerate(peers):
            merged = merged + coefficients[j + 1].float() * peer
        return merged


class AttackNeedsAFetchedModel(torch.nn.Module):
    def forward(self, own: Tensor, fetched: List[Tensor]) -> Tensor:
        return torch.stack(fetched).mean(0)


class AttackWrongSignature(torch.nn.Module):
    def forward(self, own: Tensor, fetched: Tensor) -> Tensor:
        return own


class AttackFlaky(torch.nn.Module):
    def forward(self, own: Tensor, fetched: List[Tensor]) -> Tensor:
        s = sentinel(own)
        if s == 123:
            return own * float("nan")
        if s == 124:
            raise RuntimeError("flaky attack: sentinel 124")
        if s == 125:
            return own[:2].clone()
        return -own


class MetricEveryThirdNaN(torch.nn.Module):
    """cos_weights, but NaN on every third call."""

    calls: int

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        self.calls += 1
        if self.calls % 3 == 0:
            return float("nan")
        return float(torch.dot(own, peer) / (torch.linalg.norm(own) * torch.linalg.norm(peer)))


class MergeEveryThirdThrows(torch.nn.Module):
    """The weighted average, but an exception on every third call."""

    calls: int

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor:
        self.calls += 1
        if self.calls % 3 == 0:
            raise RuntimeError("every third merge fails")
        merged = coefficients[0].float() * own
        for j, peer in enumerate(peers):
            merged = merged + coefficients[j + 1].float() * peer
        return merged


class AttackEveryThirdNaN(torch.nn.Module):
    """Serves -w, but NaN on every third call."""

    calls: int

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, own: Tensor, fetched: List[Tensor]) -> Tensor:
        self.calls += 1
        if self.calls % 3 == 0:
            return own * float("nan")
        return -own


class MetricFalseSymmetric(torch.nn.Module):
    """Says it is symmetric, but scores the own model's norm."""

    symmetric: bool

    def __init__(self):
        super().__init__()
        self.symmetric = True

    def forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float:
        return float(torch.linalg.norm(own))


FIXTURES = {
    "no_forward": NoForward,
    "metric_two_arguments": MetricTwoArguments,
    "metric_returns_a_vector": MetricReturnsAVector,
    "metric_int_attribute": MetricIntAttribute,
    "metric_reads_nothing": MetricReadsNothing,
    "metric_loss_without_argument": MetricLossWithoutArgument,
    "metric_inverse_loss": MetricInverseLoss,
    "metric_cos_grad": MetricCosGrad,
    "metric_writes_input": MetricWritesInput,
    "metric_throws": MetricThrows,
    "metric_nan": MetricNaN,
    "metric_flaky": MetricFlaky,
    "merge_one_argument": MergeOneArgument,
    "merge_short_result": MergeShortResult,
    "merge_writes_input": MergeWritesInput,
    "merge_flaky": MergeFlaky,
    "attack_needs_a_fetched_model": AttackNeedsAFetchedModel,
    "attack_wrong_signature": AttackWrongSignature,
    "attack_flaky": AttackFlaky,
    "metric_every_third_nan": MetricEveryThirdNaN,
    "metric_false_symmetric": MetricFalseSymmetric,
    "merge_every_third_throws": MergeEveryThirdThrows,
    "attack_every_third_nan": AttackEveryThirdNaN,
}


def main() -> None:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, module in FIXTURES.items():
        torch.jit.script(module()).save(os.path.join(out_dir, name + ".pt"))


if __name__ == "__main__":
    main()
