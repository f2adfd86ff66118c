//! # vmdump: the host
//!
//! Loads compressor plugins through the C ABI of `vmdump-sdk`
//! ([`plugin`]), applies the host's compression policy ([`codec`]), and runs
//! the command line ([`cli`]).
#![deny(unsafe_code)]

pub mod classify;
pub mod cli;
pub mod codec;
pub mod crypt;
pub mod dmesg;
pub mod dump;
pub mod entropy;
pub mod estimate;
pub mod exclude;
pub mod health;
pub mod input;
pub mod interrupt;
pub mod kernel;
pub mod level;
pub mod plan;
pub mod plugin;
pub mod pool;
pub mod profile;
pub mod progress;
pub mod ranges;
pub mod read;
pub mod resident;
pub mod store;
pub mod triage;
pub mod xlat;
