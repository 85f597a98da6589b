//! A trial, for the router's tuning test only: a sentence embedding of
//! each text the router learns from and scores, appended to its features,
//! so that leave-one-round-out can tell whether a model that knows words
//! no example used helps (docs/ROUTING.md "A sentence embedding, tried").
//! The embedding comes from another process (`examples/sentence_embedding.rs`,
//! built with the `embedding-trial` feature by scripts/embedding-trial.sh),
//! named by `EMBEDDING_TRIAL_BIN` and `EMBEDDING_TRIAL_MODEL`; without
//! them nothing changes. `EMBEDDING_TRIAL_CACHE` keeps the embeddings
//! between runs (one text a line: the text as JSON, a tab, its vector),
//! `EMBEDDING_TRIAL_WEIGHT` scales them against the TF-IDF features (1).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{LazyLock, Mutex};

/// The embedding's length (all-MiniLM-L6-v2).
pub(crate) const DIMENSIONS: usize = 384;

struct Embedder {
    cache: HashMap<String, Vec<f32>>,
    _child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    file: Option<std::fs::File>,
    weight: f32,
}

static EMBEDDER: LazyLock<Option<Mutex<Embedder>>> = LazyLock::new(|| {
    let bin = std::env::var("EMBEDDING_TRIAL_BIN").ok()?;
    let model = std::env::var("EMBEDDING_TRIAL_MODEL").ok()?;
    let mut cache = HashMap::new();
    let path = std::env::var("EMBEDDING_TRIAL_CACHE").ok();
    if let Some(text) = path.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        for line in text.lines() {
            let parsed = line.split_once('\t').and_then(|(k, v)| {
                Some((serde_json::from_str::<String>(k).ok()?, serde_json::from_str::<Vec<f32>>(v).ok()?))
            });
            cache.extend(parsed.filter(|(_, v)| v.len() == DIMENSIONS));
        }
    }
    let file = path.and_then(|p| std::fs::OpenOptions::new().create(true).append(true).open(p).ok());
    let mut child = Command::new(&bin)
        .arg(&model)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("EMBEDDING_TRIAL_BIN {bin}: {e}"));
    let input = child.stdin.take().expect("a piped stdin");
    let output = BufReader::new(child.stdout.take().expect("a piped stdout"));
    let weight = std::env::var("EMBEDDING_TRIAL_WEIGHT").ok().and_then(|w| w.parse().ok()).unwrap_or(1.0);
    Some(Mutex::new(Embedder { cache, _child: child, input, output, file, weight }))
});

/// Whether the trial is on (both variables set).
pub(crate) fn on() -> bool {
    EMBEDDER.is_some()
}

/// `text`'s embedding, scaled by the trial's weight; none when the trial is off.
pub(crate) fn embed(text: &str) -> Option<Vec<f32>> {
    let mut e = crate::util::lock(EMBEDDER.as_ref()?);
    let key = text.replace('\n', " ").trim().to_string();
    let weight = e.weight;
    let scaled = |v: &[f32]| v.iter().map(|x| x * weight).collect();
    if let Some(v) = e.cache.get(&key) {
        return Some(scaled(v));
    }
    writeln!(e.input, "{key}").and_then(|()| e.input.flush()).expect("the embedding process takes a line");
    let mut line = String::new();
    e.output.read_line(&mut line).expect("the embedding process answers a line");
    let v: Vec<f32> = serde_json::from_str(line.trim()).expect("the embedding process answers a JSON array");
    assert_eq!(v.len(), DIMENSIONS, "the embedding's length");
    if let Some(f) = e.file.as_mut() {
        let _ = writeln!(f, "{}\t{}", serde_json::Value::String(key.clone()), line.trim());
    }
    let out = scaled(&v);
    e.cache.insert(key, v);
    Some(out)
}
