//! A2A 1.0: server conformance paths and interop with the official a2a-sdk.
