//! Built-in images.
