#!/usr/bin/python3
"""A metric meshlearn does not have: the cosine similarity of one layer of the model only,
s_ij = cos(w_i[start:stop], w_j[start:stop]), Python slice rules (negative = from the end).

The flat weights follow the model's layout, layer after layer (base/param_layout.h). For the
`cnn` on 10 classes the last layer, fc2 (64 x 10 weights and 10 biases), is the last 650 floats
and the first, conv1 (16 x 3 x 3 and 16), the first 160. Save the last-layer metric with

    /usr/bin/python3 plugins/examples/layer_cosine.py --start -650 last_layer.pt

(or `--start 0 --stop 160` for conv1) and run it with `[learning] metric = "torchscript"`,
`metric_path = "last_layer.pt"` (docs/plugins.md). Rationale: the last layer maps the features
to the classes, so it is where nodes whose data differ in what the labels mean part ways; a few
hundred floats instead of the whole model make it cheap too.
"""
import argparse
import math

import torch


class LayerCosine(torch.nn.Module):
    start: int
    stop: int
    symmetric: bool

    def __init__(self, start: int, stop: int):
        super().__init__()
        self.start = start
        self.stop = stop
        self.symmetric = True

    def forward(self, own: torch.Tensor, peer: torch.Tensor, initial: torch.Tensor) -> float:
        stop = self.stop if self.stop != 0 else own.numel()
        a = own[self.start:stop]
        b = peer[self.start:stop]
        norms = float(torch.dot(a, a)) * float(torch.dot(b, b))
        if norms == 0.0:
            raise ValueError("layer_cosine: the layer's weights have a zero norm")
        return max(-1.0, min(1.0, float(torch.dot(a, b)) / math.sqrt(norms)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=-650, help="first float of the layer")
    parser.add_argument("--stop", type=int, default=0, help="one past its last (0: the end)")
    parser.add_argument("out", help="the .pt file to write")
    args = parser.parse_args()
    torch.jit.script(LayerCosine(args.start, args.stop)).save(args.out)


if __name__ == "__main__":
    main()
