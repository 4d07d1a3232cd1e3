"""The PyTorch twin of examples/fashion_classifier.cpp, for comparison only (bench/RESULTS.md):
the same network, initialisation rule (PyTorch's defaults, which tapegrad's layers follow),
optimizer, batch and epochs; its data order and random draws are PyTorch's own.
    /usr/bin/python3 bench/torch_fashion_classifier.py [--epochs 3] [--threads 2] ...
The last line is test_accuracy=<fraction> on the 10 000 test images."""
import torch
import torch.nn.functional as F
from torch import nn

import torch_fashion_common as common

a = common.parse("PyTorch twin of fashion_classifier", epochs=3, batch=64)
train_x, train_y = common.images(a.data, "train"), common.labels(a.data, "train")
test_x, test_y = common.images(a.data, "t10k"), common.labels(a.data, "t10k")

C1, C2, HIDDEN = 16, 32, 128
model = nn.Sequential(
    nn.Conv2d(1, C1, 3, padding=1, bias=False), nn.BatchNorm2d(C1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(C1, C2, 3, padding=1, bias=False), nn.BatchNorm2d(C2), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Dropout(0.25), nn.Linear(C2 * 7 * 7, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
schedule = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.3)  # 0.3x after every epoch
print(f"model: {sum(p.numel() for p in model.parameters())} parameters; {torch.get_num_threads()} threads")


def evaluate():
    loss, correct = 0.0, 0
    for s in range(0, test_x.shape[0], 500):
        logits = model(test_x[s : s + 500])
        y = test_y[s : s + 500]
        loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(1) == y).sum().item()
    n = test_x.shape[0]
    return loss / n, f"test_loss {loss / n:.4f}  test_accuracy {correct / n:.4f}", correct / n


last = common.fit(a, model, opt, train_x, train_y, lambda x, y: F.cross_entropy(model(x), y), evaluate, schedule)
print(f"test_accuracy={last[2]:.4f}")
