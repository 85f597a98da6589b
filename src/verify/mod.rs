//! Task Notes → checks → verdicts (seeds/001).
