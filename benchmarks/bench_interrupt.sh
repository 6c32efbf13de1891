#!/bin/bash
# How long `pycert prove` takes to stop on Ctrl-C (INT) or SIGTERM (TERM) while a wasm Lean process
# checks a fresh trace, and whether a Lean process or a half-filled --out is left behind.
# Usage: benchmarks/bench_interrupt.sh INT|TERM   (pycert on PATH; works in a scratch directory)
set -m  # job control: the run gets its own process group, as at a terminal, and SIGINT is not ignored
sig=${1:-INT}
work=$(mktemp -d /tmp/pycert-bench-interrupt-XXXXXX)
cd "$work" || exit 2
python3 -c "
import random; r = random.Random(); ids = [r.getrandbits(64) for _ in range(500)]
open('t.txt', 'w').write(''.join(f'{r.choice(ids)}\n' for _ in range(3000)))"
pycert prove ceiling --trace t.txt --out certs > out.txt 2>&1 &
pid=$!
for _ in $(seq 1 300); do sleep 1; grep -q "CeilingT: checking" out.txt && break; done
sleep 3
echo "Lean (node) processes before: $(pgrep -fc lean-pycert.js)"
t0=$(date +%s.%N); kill -"$sig" "$pid"; wait "$pid"; rc=$?; t1=$(date +%s.%N)
echo "exit $rc after $(python3 -c "print(round($t1 - $t0, 2))") s"
sleep 1
echo "Lean (node) processes left: $(pgrep -fc lean-pycert.js)"
echo "files left in --out: $(find certs -type f 2>/dev/null | wc -l)"
rm -rf "$work"
