"""Times the Fashion-MNIST examples against their PyTorch twins (bench/torch_fashion_*.py),
alternating the contenders run by run (the machine is shared and noisy), at one thread
count, and prints per example: the training seconds of every epoch of every run, the median
epoch time, images/s and the final metric line of each contender.
    /usr/bin/python3 bench/compare_examples.py --build build/release --threads 2 --rounds 1
For comparison only: torch is never a dependency of tapegrad's build or tests."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCH = re.compile(r"^epoch (\d+)/(\d+)  (.*)  \(train ([0-9.]+) s, ([0-9]+) img/s; test ([0-9.]+) s", re.M)
RESULT = re.compile(r"^(test_[a-z]+=.*)$", re.M)

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--build", default="build/release", help="the folder with the example binaries")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--rounds", type=int, default=1)
p.add_argument("--examples", nargs="+", default=["fashion_classifier", "fashion_autoencoder"])
p.add_argument("--epochs", type=int, default=0, help="0: each example's default")
p.add_argument("--out", default="/tmp/tapegrad_compare_examples")
p.add_argument("--wait-policy", default="passive", choices=["passive", "active", "unset"],
               help="OMP_WAIT_POLICY for both contenders (default passive, as scripts/main.sh sets for "
                    "tapegrad: spinning threads lose whole time slices on a shared machine)")
a = p.parse_args()


ENV = dict(os.environ)
if a.wait_policy == "unset":
    ENV.pop("OMP_WAIT_POLICY", None)
else:
    ENV["OMP_WAIT_POLICY"] = a.wait_policy


def run(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    epochs = [(float(m[3]), float(m[4]), m[2]) for m in EPOCH.findall(r.stdout)]
    return {"epochs": epochs, "result": RESULT.findall(r.stdout)[-1], "wall": time.perf_counter() - t}


for ex in a.examples:
    extra = ["--threads", str(a.threads)] + (["--epochs", str(a.epochs)] if a.epochs else [])
    contenders = {
        "tapegrad": [os.path.join(a.build, ex), "--out", a.out] + extra,
        "pytorch": ["/usr/bin/python3", os.path.join(HERE, f"torch_{ex}.py")] + extra,
    }
    runs = {k: [] for k in contenders}
    for r in range(a.rounds):
        for name, cmd in contenders.items():
            runs[name].append(run(cmd))
            last = runs[name][-1]
            print(f"[{ex} round {r + 1}] {name}: epochs (train s) {[e[0] for e in last['epochs']]}, "
                  f"wall {last['wall']:.1f} s, {last['result']}", flush=True)
    print(f"\n{ex}, {a.threads} threads, {a.rounds} round(s):")
    print("| | median train s/epoch | img/s | epoch times (s) | final |")
    print("|---|---:|---:|---|---|")
    for name, rs in runs.items():
        times = [e[0] for r in rs for e in r["epochs"]]
        rates = [e[1] for r in rs for e in r["epochs"]]
        print(f"| {name} | {statistics.median(times):.1f} | {statistics.median(rates):.0f} | "
              f"{', '.join(f'{t:.1f}' for t in times)} | {'; '.join(r['result'] for r in rs)} |")
    print(flush=True)
