//! The spill hot path must not allocate per record or per block once warmed up. A counting
//! global allocator (for this test binary only) checks it for the writer and the reader.
//!
//! zstd allocates its contexts through its own C allocator, which is not counted here; the Rust
//! side of every codec is.
// Test helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test
// failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::CODECS;
use sluice_format::{RunReader, RunWriter};

thread_local! {
    /// Allocations made by the current thread; other test threads do not disturb it.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: the allocator may run while thread-locals are being torn down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract holds exactly as it does for `System`.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `alloc_zeroed`'s contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded unchanged; the caller upholds `realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged; the caller upholds `dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Record `i`: a 16-byte key and a ~80-byte value with some repetition, like typical spills.
fn fill_record(i: u64, key: &mut [u8; 16], value: &mut [u8; 80]) {
    key[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    key[8..].copy_from_slice(&i.to_be_bytes());
    for (j, byte) in value.iter_mut().enumerate() {
        *byte = b"lorem ipsum dolor sit amet "[(j + i as usize) % 27];
    }
}

const WARM_UP: u64 = 2_000;
const MEASURED: u64 = 20_000;

#[test]
fn steady_state_reading_and_writing_do_not_allocate() {
    for codec in CODECS {
        let (mut key, mut value) = ([0u8; 16], [0u8; 80]);
        // Room for the whole run up front, so the output Vec itself never grows.
        let out = Vec::with_capacity(((WARM_UP + MEASURED) * 120) as usize);
        let mut writer = RunWriter::new(out, codec, 16 * 1024, "alloc");
        for i in 0..WARM_UP {
            fill_record(i, &mut key, &mut value);
            writer.write_record(&key, &value).unwrap();
        }
        let before = allocations();
        for i in WARM_UP..WARM_UP + MEASURED {
            fill_record(i, &mut key, &mut value);
            writer.write_record(&key, &value).unwrap();
        }
        assert_eq!(allocations() - before, 0, "{codec:?}: writer allocated");
        let bytes = writer.into_inner().unwrap();

        let mut reader = RunReader::new(&bytes[..], "alloc", 0);
        for i in 0..WARM_UP {
            assert!(reader.advance().unwrap());
            fill_record(i, &mut key, &mut value);
            assert_eq!((reader.key(), reader.value()), (&key[..], &value[..]));
        }
        let before = allocations();
        for i in WARM_UP..WARM_UP + MEASURED {
            assert!(reader.advance().unwrap());
            fill_record(i, &mut key, &mut value);
            assert!(reader.key() == key && reader.value() == value);
        }
        assert!(!reader.advance().unwrap());
        assert_eq!(allocations() - before, 0, "{codec:?}: reader allocated");
    }
}
