//! The pipeline of DESIGN §1.

pub struct Runtime {}
