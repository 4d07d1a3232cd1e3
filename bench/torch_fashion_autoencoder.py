"""The PyTorch twin of examples/fashion_autoencoder.cpp, for comparison only (bench/RESULTS.md):
the same network (strided convs 28 -> 14 -> 7, a 32-number code, transposed convs back),
initialisation rule (PyTorch's defaults, which tapegrad's layers follow), optimizer, batch
and epochs; its data order and random draws are PyTorch's own.
    /usr/bin/python3 bench/torch_fashion_autoencoder.py [--epochs 1] [--threads 2] ...
The last line is test_bce=<float> test_mse=<float> on the 10 000 test images."""
import torch
import torch.nn.functional as F
from torch import nn

import torch_fashion_common as common

a = common.parse("PyTorch twin of fashion_autoencoder", epochs=1, batch=64)
train_x, test_x = common.images(a.data, "train"), common.images(a.data, "t10k")

down = dict(kernel_size=3, stride=2, padding=1)
up = dict(kernel_size=3, stride=2, padding=1, output_padding=1)
model = nn.Sequential(
    nn.Conv2d(1, 16, **down), nn.ReLU(), nn.Conv2d(16, 32, **down), nn.ReLU(),  # 28 -> 14 -> 7
    nn.Flatten(), nn.Linear(32 * 7 * 7, 32),                                    # the code
    nn.Linear(32, 32 * 7 * 7), nn.ReLU(), nn.Unflatten(1, (32, 7, 7)),
    nn.ConvTranspose2d(32, 16, **up), nn.ReLU(), nn.ConvTranspose2d(16, 1, **up))  # 7 -> 14 -> 28, logits
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
print(f"model: {sum(p.numel() for p in model.parameters())} parameters; {torch.get_num_threads()} threads")


def evaluate():
    bce, mse = 0.0, 0.0
    for s in range(0, test_x.shape[0], 500):
        x = test_x[s : s + 500]
        logits = model(x)
        bce += F.binary_cross_entropy_with_logits(logits, x).item() * x.shape[0]
        mse += F.mse_loss(torch.sigmoid(logits), x).item() * x.shape[0]
    n = test_x.shape[0]
    return bce / n, f"test_bce {bce / n:.4f}  test_mse {mse / n:.4f}", mse / n


last = common.fit(a, model, opt, train_x, None, lambda x, _: F.binary_cross_entropy_with_logits(model(x), x), evaluate)
print(f"test_bce={last[0]:.6f} test_mse={last[2]:.6f}")
