//! Writing dumps: sinks (plain file, flattened stream) and the kdump writer.

pub mod sink;
