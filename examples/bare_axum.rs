//! The limit for `scripts/bench.sh`: a bare axum server that reads the body
//! of `POST /v1/delegate` and answers a small JSON object, with no rails, no
//! store and no agent. Built in the same run, with the same axum, tokio and
//! profile as `switchboard serve`.
//!
//! `cargo run --release --example bare_axum -- 127.0.0.1:7499`

use axum::Router;
use axum::body::Bytes;
use axum::routing::post;

async fn hello(body: Bytes) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({"status": "success", "summary": "hello", "bytes": body.len()}))
}

#[tokio::main]
async fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:7499".into());
    let listener = match tokio::net::TcpListener::bind(&addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("bare_axum: cannot listen on {addr}: {e}");
            std::process::exit(2);
        }
    };
    println!("bare axum listening on http://{}", listener.local_addr().map_or(addr, |a| a.to_string()));
    let app = Router::new().route("/v1/delegate", post(hello));
    if let Err(e) = axum::serve(listener, app).await {
        eprintln!("bare_axum: {e}");
        std::process::exit(1);
    }
}
