#!/usr/bin/python3
"""How much one small cluster's accuracy moves from seed to seed under file 004's pipeline, outside
meshlearn: a yardstick for comparing meshlearn with single-seed figures of the paper's code
(README "File 004's input pipeline"). Needs Debian's python3-torch and python3-torchvision
(scripts/setup.sh installs both) and the Fashion-MNIST of dataset-fashion-mnist:

    /usr/bin/python3 training/tools/cluster_seed_spread.py --seeds 4

One cluster of the covariate scenario under the oracle: `--clients` clients (5), each with 500
training and 100 validation images drawn without overlap from the training set, rotated by
`--degrees` (10). The pipeline is the one the paper describes and meshlearn's
fmnist-covariate.toml follows: pixels to [-1, 1], then torchvision's rotation (nearest pixel,
outside filled with 0), the CNN of file 004 (conv 16, conv 32, fc 64, fc 10), Adam 3e-4 made anew
for every local epoch, batches of 8, one epoch; round 0 trains alone, each of `--rounds` (5)
rounds averages the cluster's models (equal sizes: the plain mean), then trains. Each client keeps
its best-validation-loss model and is tested on all 10,000 rotated test images; the line is the
clients' mean accuracy per seed, with its mean and standard deviation.

With `--per-client-init` each client starts from its own random model (as file 004's code, where
every client builds its own), instead of one shared initial model (meshlearn).
"""
import argparse
import gzip

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.transforms.functional as TF
from torchvision.transforms import InterpolationMode

DATA = '/usr/share/datasets/fashion-mnist/'
TRAIN_PER_CLIENT, VALIDATION_PER_CLIENT = 500, 100  # fmnist-covariate.toml's [data]


def read_idx(name):
    with gzip.open(DATA + name) as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], 'big') for i in range(dims)]
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * dims).reshape(shape)


def images(pixels, degrees):
    x = (torch.tensor(pixels, dtype=torch.float32) / 255.0 - 0.5) / 0.5
    return TF.rotate(x.unsqueeze(1), degrees, interpolation=InterpolationMode.NEAREST, fill=0)


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 16, 3), nn.Conv2d(16, 32, 3)
        self.fc1, self.fc2 = nn.Linear(800, 64), nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x.flatten(1)))), 1)


def cluster_accuracy(seed, args, train_set, test_images, test_labels):
    torch.manual_seed(seed)
    shuffled = np.random.default_rng(seed).permutation(len(train_set[1]))
    per_client = TRAIN_PER_CLIENT + VALIDATION_PER_CLIENT
    clients = []
    for c in range(args.clients):
        rows = shuffled[c * per_client:(c + 1) * per_client]
        x, y = images(train_set[0][rows], args.degrees), torch.tensor(train_set[1][rows]).long()
        n = TRAIN_PER_CLIENT
        clients.append((x[:n], y[:n], x[n:], y[n:]))
    models = [Cnn() for _ in clients]
    if not args.per_client_init:
        for m in models[1:]:
            m.load_state_dict(models[0].state_dict())
    best = [(float('inf'), None) for _ in clients]

    def train(c):
        model, (x, y, xv, yv) = models[c], clients[c]
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
        order = torch.randperm(len(x))
        for start in range(0, len(x), 8):
            batch = order[start:start + 8]
            optimizer.zero_grad()
            F.nll_loss(model(x[batch]), y[batch]).backward()
            optimizer.step()
        with torch.no_grad():
            loss = F.nll_loss(model(xv), yv).item()
        if loss < best[c][0]:
            best[c] = (loss, {k: v.clone() for k, v in model.state_dict().items()})

    for c in range(len(clients)):
        train(c)
    for _ in range(args.rounds):
        states = [m.state_dict() for m in models]
        mean = {k: sum(s[k] for s in states) / len(states) for k in states[0]}
        for c, m in enumerate(models):
            m.load_state_dict(mean)
            train(c)
    accuracies = []
    for _, state in best:
        model = Cnn()
        model.load_state_dict(state)
        with torch.no_grad():
            correct = (model(test_images).argmax(1) == test_labels).float()
        accuracies.append(correct.mean().item() * 100)
    return float(np.mean(accuracies))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, default=4, help='seeds 1..N')
    parser.add_argument('--clients', type=int, default=5)
    parser.add_argument('--degrees', type=float, default=10)
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--per-client-init', action='store_true')
    args = parser.parse_args()
    torch.set_num_threads(1)
    train_set = (read_idx('train-images-idx3-ubyte.gz'), read_idx('train-labels-idx1-ubyte.gz'))
    # The rotated test set is the same for every seed.
    test_images = images(read_idx('t10k-images-idx3-ubyte.gz'), args.degrees)
    test_labels = torch.tensor(read_idx('t10k-labels-idx1-ubyte.gz')).long()
    results = [cluster_accuracy(s, args, train_set, test_images, test_labels)
               for s in range(1, args.seeds + 1)]
    print('seeds 1-%d: %s  mean %.2f  sd %.2f' % (args.seeds, ' '.join('%.2f' % r for r in results),
                                                   np.mean(results), np.std(results, ddof=1)))


if __name__ == '__main__':
    main()
