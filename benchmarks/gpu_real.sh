#!/usr/bin/env bash
# The shape-level dry run (issue 36) on a real GPU: run on a machine with CUDA (the project's `device`
# tool). A kernel moves a model and data to CUDA and trains one step, so the dry run takes the stand-in
# path because CUDA is initialised (nothing forced); then each crash case and its fix is dry-run and run
# for real on the GPU, and the table is printed (benchmarks/gpu_shapes.py --real-gpu). Where TensorFlow
# sees a GPU too, the Keras mutants follow (benchmarks/keras_shapes.py --real-gpu).
# Usage: benchmarks/gpu_real.sh [python]   (default: the python on PATH, with crane-lsp and a CUDA torch)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-python}"
"$PY" -c "import torch, sys; ok = torch.cuda.is_available(); print('torch', torch.__version__, 'cuda', ok); sys.exit(0 if ok else 2)"
unset CRANE_DRYRUN_STANDIN
status=0
"$PY" benchmarks/gpu_shapes.py --real-gpu --budget 30 || status=$?
if "$PY" -c "import sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices('GPU') else 2)" 2>/dev/null; then
    "$PY" benchmarks/keras_shapes.py --real-gpu --budget 30 || status=$?
else
    echo "TensorFlow sees no GPU here: the Keras part is left out"
fi
exit "$status"
