#!/usr/bin/env bash
# Creates the benchmark-only virtual environment with every peer loader. Peers are never
# dependencies of fastpack itself. Needs root for apt-get (FFCV's C extension) and about 3 GB.
# usage: bash benchmarks/readers/setup_peers.sh [VENV=/work/bench-venv]
set -euo pipefail
VENV=${1:-/work/bench-venv}
REPO=$(cd "$(dirname "$0")/../.." && pwd)

python3 -m venv "$VENV"
PIP="$VENV/bin/pip"
"$PIP" install -q --upgrade pip setuptools wheel
# torch first, and only this one: the peers' requirements must not pull another (CUDA) build.
# Where pip's configuration offers no CPU wheel, set TORCH_PIP_ARGS, for example to
# "--index-url https://download.pytorch.org/whl/cpu".
"$PIP" install -q ${TORCH_PIP_ARGS:-} torch==2.13.0
"$PIP" install -q -e "$REPO" webdataset simplejpeg nvidia-dali-cuda120

# LitData and Mosaic Streaming require torchvision (and Mosaic pins numpy<2.2): install them
# without dependencies, then the dependencies they import. Mosaic's torchvision imports are
# answered by benchmarks/readers/stubs (see its README).
"$PIP" install -q --no-deps litdata mosaicml-streaming
"$PIP" install -q lightning-utilities filelock boto3 requests urllib3 tifffile obstore \
  xxhash zstd python-snappy Brotli tqdm catalogue "transformers<5"

# FFCV builds a C extension against system libjpeg-turbo and OpenCV; it requires opencv-python,
# which would clash with the opencv-python-headless already installed, so no deps here either.
if command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq libturbojpeg0-dev libopencv-dev pkg-config >/dev/null
fi
"$PIP" install -q --no-deps --no-build-isolation ffcv \
  || echo "ffcv could not be built: the benchmark will list it with the reason" >&2
"$PIP" install -q numba terminaltables fastargs assertpy psutil pytorch_pfn_extras

# Pillow-SIMD in place of Pillow, for the ImageFolder and webdataset PIL peers: it is Pillow with
# SIMD resize and filters, built from source against libjpeg-turbo, with AVX2 as its documentation
# asks (CC="cc -mavx2"). Installed last, so that no later requirement brings Pillow back. Where
# it does not build, Pillow stays and the benchmark's version record says so (Pillow-SIMD's
# PIL.__version__ ends in ".postN").
if command -v apt-get >/dev/null; then
  apt-get install -y -qq libjpeg62-turbo-dev zlib1g-dev >/dev/null \
    || apt-get install -y -qq libjpeg-dev zlib1g-dev >/dev/null
fi
"$PIP" uninstall -q -y pillow pillow-simd 2>/dev/null || true
if ! CC="${PILLOW_SIMD_CC:-cc -mavx2}" "$PIP" install -q --no-cache-dir --no-binary pillow-simd \
  pillow-simd==12.1.1.post0; then
  echo "pillow-simd could not be built: installing Pillow instead" >&2
  "$PIP" install -q pillow
fi

"$VENV/bin/python" - "$REPO/benchmarks/readers/stubs" <<'PY'
import importlib
import importlib.util
import sys

import torch

if importlib.util.find_spec("torchvision") is None:  # as benchmarks/readers/peers/mosaic_peer.py does
    sys.path.append(sys.argv[1])
for name in (
    "fastpack", "webdataset", "litdata", "streaming", "ffcv", "nvidia.dali", "PIL", "cv2", "simplejpeg"
):
    try:
        importlib.import_module(name)
        print(f"ok      {name}")
    except Exception as e:  # report every peer, do not stop at the first
        print(f"FAILED  {name}: {type(e).__name__}: {e}")
import PIL

print("torch", torch.__version__, "PIL", PIL.__version__)
PY
