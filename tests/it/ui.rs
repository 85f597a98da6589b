//! The web page at `/`, in headless Chromium.
