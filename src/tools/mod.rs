//! The JSON tool surface.
