//! Shared-memory streaming between the sluice engine and an external mapper or reducer.
//!
//! `docs/shm-protocol.md` is the contract; this crate implements it for the engine and for
//! programs written in Rust (the C and Python clients live under `clients/`).
//!
//! # Brief overview
//!
//! * [`EngineRegion`] (engine side) creates a sealed `memfd` region with one ring per
//!   direction, starts the child with a descriptor of it ([`spawn`]), and moves bytes
//!   through [`ChildInput`] (`Write`) and [`ChildOutput`] (`Read`). Every value the child can
//!   write is validated; a misbehaving child gets a [`ShmError::Violation`].
//! * [`Channel`] (client side) attaches to the region named in the environment, or, under
//!   Hadoop Streaming with sluice's plugin, the one the [`handshake`] names; otherwise it falls
//!   back to stdin and stdout. It offers `BufRead` and `Write`.
//!
//! Inside, `ring` holds the single-producer, single-consumer byte ring with the batched futex
//! wake-ups, `sync` the atomics and the futex it uses, and `region` the mapping, the only place
//! where offsets become pointers.
//!
//! Built with `--cfg loom` (`tests/shm/loom.sh`), the crate is only the ring and its model-checked
//! tests: the ring runs on loom's atomics and a model of the futex (see `sync`), on the heap
//! instead of a shared mapping, and the engine and client sides, which need real processes,
//! are left out.

// In a loom build only the ring's tests use the ring.
#![cfg_attr(loom, allow(dead_code))]

#[cfg(not(loom))]
mod client;
#[cfg(not(loom))]
mod engine;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
#[cfg(not(loom))]
pub mod handshake;
mod layout;
#[cfg(not(loom))]
mod region;
mod ring;
mod sync;

#[cfg(not(loom))]
pub use client::Channel;
#[cfg(not(loom))]
pub use engine::{spawn, ChildInput, ChildOutput, ChildStatus, ChildWatch, EngineRegion};
pub use layout::{
    Layout, RingLayout, ENV_FD, ENV_VERSION, HEADER_LEN, MAX_CAPACITY, MIN_CAPACITY, VERSION,
};

/// Default capacity of each ring: big enough that batched wake-ups are rare, small enough to
/// stay in the caches' reach.
pub const DEFAULT_CAPACITY: u64 = 1 << 20;

/// What can go wrong with a shared-memory channel.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    /// A ring capacity that the protocol does not allow.
    #[error("ring capacity {0} is not a power of two between 4 KiB and 1 GiB")]
    Capacity(u64),
    /// A system call needed to set up the region failed.
    #[error("cannot set up shared memory ({0})")]
    Setup(&'static str, #[source] std::io::Error),
    /// The environment names the region wrongly.
    #[error("{0}")]
    Env(String),
    /// The region's header is not one this client can use.
    #[error("the shared region's header is invalid: {0}")]
    BadHeader(String),
    /// The engine speaks another version of the protocol.
    #[error("the engine offers shm protocol version {0}; this client speaks version {VERSION}")]
    Version(u32),
    /// The peer broke the protocol: a counter moved backwards or past what is possible.
    #[error("shm protocol violation: {0}")]
    Violation(String),
    /// The peer process is gone.
    #[error("the other side of the shared-memory channel is gone")]
    PeerGone,
    /// The engine gave up on the task.
    #[error("the engine aborted the task")]
    Aborted,
    /// The task is being stopped (cancelled or timed out).
    #[error("the program was stopped")]
    Stopped,
}
