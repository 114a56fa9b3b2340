//! sluice as real clients drive it: tools that build Hadoop command lines (`file:` URIs for
//! every path, multi-step job chains), read the output from where the console said it is,
//! parse Hadoop's console layout for counters and failures, run sluice under a
//! pseudo-terminal, or interrupt it.
//!
//! Expected results come from the tests themselves (inputs small enough to know their output)
//! or from the layout Hadoop's own job client prints, never from sluice's earlier output.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

#[path = "clients/console.rs"]
mod console;
#[path = "clients/fs_clients.rs"]
mod fs_clients;
#[path = "clients/harness.rs"]
mod harness;
#[path = "clients/mrjob.rs"]
mod mrjob;
#[path = "clients/uris.rs"]
mod uris;
#[path = "clients/wrapper.rs"]
mod wrapper;
