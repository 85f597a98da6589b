//! A2A streams as Server-Sent Events: the task as it was, then its live
//! events, one `data:` line each, until the turn ends.

use std::convert::Infallible;

use axum::http::{HeaderValue, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::a2a::{KEEP_ALIVE, ends_stream};
use crate::protocol::a2a::types::{StreamResponse, Task};

/// A stream of A2A responses as Server-Sent Events, one `data:` line each:
/// for JSON-RPC (`id` set) each wrapped as a JSON-RPC response. The stream
/// closes after the event that ends the turn (terminal or interrupted
/// state); a subscription's first snapshot closes it only when terminal.
pub(super) fn sse(
    first: Task,
    rx: broadcast::Receiver<StreamResponse>,
    id: Option<Value>,
    subscription: bool,
) -> Response {
    let frame = move |ev: &StreamResponse| -> SseEvent {
        let body = match &id {
            Some(id) => json!({"jsonrpc": "2.0", "id": id, "result": ev}),
            None => serde_json::to_value(ev).unwrap_or_default(),
        };
        SseEvent::default().data(body.to_string())
    };
    let done_at_start = first.status.state.is_terminal() || (!subscription && first.status.state.ends_turn());
    let first = StreamResponse::Task(first);
    // (the first event still to send, the receiver, whether the stream is done)
    let stream = futures::stream::unfold((Some(first), rx, done_at_start), move |(first, mut rx, done)| {
        let frame = frame.clone();
        async move {
            if let Some(f) = first {
                return Some((Ok::<_, Infallible>(frame(&f)), (None, rx, done)));
            }
            if done {
                return None;
            }
            loop {
                match rx.recv().await {
                    Ok(ev) => {
                        let end = ends_stream(&ev);
                        return Some((Ok(frame(&ev)), (None, rx, end)));
                    }
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return None,
                }
            }
        }
    });
    sse_response(stream)
}

fn sse_response(stream: impl Stream<Item = Result<SseEvent, Infallible>> + Send + 'static) -> Response {
    let mut res = Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}
