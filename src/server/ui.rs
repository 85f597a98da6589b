//! `GET /`: the live delegation page.

use axum::response::Html;

pub(super) async fn index() -> Html<&'static str> {
    Html(include_str!("ui.html"))
}
