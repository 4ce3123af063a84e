//! The UC and UD transport rules (in progress).
