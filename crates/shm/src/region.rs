//! The shared memory itself: a sealed `memfd` mapped into both processes.
//!
//! [`Region`] owns one mapping and hands out the atomics and the data pointers the rings use.
//! It is the only place that turns offsets into pointers; every offset it accepts is checked
//! against the mapping's length, so nothing built on it can reach outside the mapping.

use std::ffi::CStr;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};

use crate::layout::*;
use crate::ShmError;

/// One mapping of the shared region.
#[derive(Debug)]
pub(crate) struct Region {
    base: NonNull<u8>,
    len: usize,
    /// The memory file, until [`Region::close_fd`]: the mapping outlives it.
    fd: Mutex<Option<OwnedFd>>,
}

// SAFETY: the mapping is plain shared memory that lives until `Region` is dropped. Every
// access to it goes through atomics or through raw copies into and out of private memory,
// never through references to its bytes, so sharing the pointer between threads is sound.
unsafe impl Send for Region {}
// SAFETY: as for `Send`: `&Region` only offers atomics and raw copies.
unsafe impl Sync for Region {}

impl Region {
    /// Creates the region for `layout` (engine side): an anonymous, sealed memory file, mapped
    /// and with its header written.
    pub(crate) fn create(layout: &Layout) -> Result<Region, ShmError> {
        let name: &CStr = c"sluice-shm";
        let fd = memfd_create(name, MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING)
            .map_err(|e| ShmError::Setup("memfd_create", e.into()))?;
        let len = i64::try_from(layout.region_len).map_err(|_| ShmError::Capacity(0))?;
        nix::unistd::ftruncate(&fd, len).map_err(|e| ShmError::Setup("ftruncate", e.into()))?;
        // The child can neither shrink the file (which would make our mapping fault) nor grow
        // it, nor lift the seals.
        let seals = SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL;
        fcntl(&fd, FcntlArg::F_ADD_SEALS(seals))
            .map_err(|e| ShmError::Setup("sealing the memory file", e.into()))?;
        let region = Region::map(fd, layout.region_len)?;
        region.write_header(layout);
        Ok(region)
    }

    /// Maps the region named by a descriptor the engine passed (client side) and checks its
    /// header. Returns the region and the layout the header describes.
    pub(crate) fn attach(fd: OwnedFd) -> Result<(Region, Layout), ShmError> {
        let stat = nix::sys::stat::fstat(&fd).map_err(|e| ShmError::Setup("fstat", e.into()))?;
        let mapped_len = u64::try_from(stat.st_size).unwrap_or(0);
        if mapped_len < HEADER_LEN {
            return Err(ShmError::BadHeader(format!(
                "the region is {mapped_len} bytes, smaller than its header"
            )));
        }
        let region = Region::map(fd, mapped_len)?;
        let magic = region.u64(H_MAGIC).load(Ordering::Acquire).to_le_bytes();
        if magic != MAGIC {
            return Err(ShmError::BadHeader(format!("bad magic {magic:02x?}")));
        }
        let version = region.u32(H_VERSION).load(Ordering::Acquire);
        if version != VERSION {
            return Err(ShmError::Version(version));
        }
        let header_len = region.u32(H_HEADER_LEN).load(Ordering::Acquire);
        if u64::from(header_len) != HEADER_LEN {
            return Err(ShmError::BadHeader(format!("header_len is {header_len}")));
        }
        let ring = |at: usize| RingLayout {
            offset: region.u64(at).load(Ordering::Acquire),
            capacity: region.u64(at + 8).load(Ordering::Acquire),
        };
        let layout = Layout::from_header(
            mapped_len,
            region.u64(H_REGION_LEN).load(Ordering::Acquire),
            region.u32(H_RINGS).load(Ordering::Acquire),
            ring(H_INPUT),
            ring(H_OUTPUT),
        )?;
        Ok((region, layout))
    }

    /// Maps the whole file, every page at once (`MAP_POPULATE`): every page of a ring is
    /// touched anyway, and one call costs less than a fault per page (see `docs/BENCHMARKS.md`,
    /// shared-memory streaming).
    fn map(fd: OwnedFd, len: u64) -> Result<Region, ShmError> {
        let len = usize::try_from(len)
            .ok()
            .and_then(NonZeroUsize::new)
            .ok_or(ShmError::Capacity(len))?;
        // SAFETY: a fresh shared mapping of a file we hold open; no existing memory is
        // affected. The file cannot shrink below `len` while it is mapped: the engine sealed
        // it against shrinking before any other process could see it, and a client maps the
        // size `fstat` reported of an already sealed file.
        let base = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED | MapFlags::MAP_POPULATE,
                fd.as_fd(),
                0,
            )
        }
        .map_err(|e| ShmError::Setup("mmap", e.into()))?;
        Ok(Region {
            base: base.cast(),
            len: len.get(),
            fd: Mutex::new(Some(fd)),
        })
    }

    fn write_header(&self, layout: &Layout) {
        // Nobody else can see the region yet: the order of these stores does not matter.
        let store = Ordering::Relaxed;
        self.u64(H_MAGIC).store(u64::from_le_bytes(MAGIC), store);
        self.u32(H_VERSION).store(VERSION, store);
        self.u32(H_HEADER_LEN).store(HEADER_LEN as u32, store);
        self.u64(H_REGION_LEN).store(layout.region_len, store);
        self.u32(H_RINGS).store(layout.ring_bits(), store);
        self.u32(H_ENGINE_PID).store(std::process::id(), store);
        for (at, ring) in [(H_INPUT, layout.input), (H_OUTPUT, layout.output)] {
            let ring = ring.unwrap_or(RingLayout {
                offset: 0,
                capacity: 0,
            });
            self.u64(at).store(ring.offset, store);
            self.u64(at + 8).store(ring.capacity, store);
        }
    }

    /// Runs `f` with the memory file's descriptor; `None` once it is closed.
    pub(crate) fn with_fd<T>(&self, f: impl FnOnce(BorrowedFd<'_>) -> T) -> Option<T> {
        let fd = self.fd.lock().unwrap_or_else(|p| p.into_inner());
        fd.as_ref().map(|fd| f(fd.as_fd()))
    }

    /// The memory file's descriptor number, while it is open.
    pub(crate) fn raw_fd(&self) -> Option<RawFd> {
        self.with_fd(|fd| fd.as_raw_fd())
    }

    /// Closes the memory file; the mapping stays. No path opens the region afterwards.
    pub(crate) fn close_fd(&self) {
        drop(self.fd.lock().unwrap_or_else(|p| p.into_inner()).take());
    }

    /// Checks that `size` bytes at `offset` lie inside the mapping and are aligned to `align`.
    fn check(&self, offset: usize, size: usize, align: usize) {
        let inside = offset.checked_add(size).is_some_and(|end| end <= self.len);
        // Offsets come from a checked `Layout` and the constants of `layout.rs`: a failure is
        // a bug in this crate, not something a peer can cause.
        assert!(
            inside && offset.is_multiple_of(align),
            "shm offset {offset} (+{size}) outside a region of {}",
            self.len
        );
    }

    /// The 32-bit word at `offset`.
    pub(crate) fn u32(&self, offset: usize) -> &AtomicU32 {
        self.check(offset, 4, 4);
        // SAFETY: the word lies inside the mapping and is aligned (checked above); the mapping
        // lives as long as `self`. Another process may write the word at any time, which is
        // what atomics are for.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast()) }
    }

    /// The 64-bit word at `offset`.
    pub(crate) fn u64(&self, offset: usize) -> &AtomicU64 {
        self.check(offset, 8, 8);
        // SAFETY: as for `u32`.
        unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }
    }

    /// A pointer to `len` bytes at `offset`, for raw copies only (never a reference: the peer
    /// may write these bytes at any time).
    pub(crate) fn bytes(&self, offset: usize, len: usize) -> NonNull<u8> {
        self.check(offset, len, 1);
        // SAFETY: inside the mapping (checked above), so the pointer stays in bounds.
        unsafe { self.base.add(offset) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `base..base+len` is the mapping made in `map`; nothing borrowed from the
        // region outlives it (everything that uses it holds an `Arc<Region>`).
        let _ = unsafe { munmap(self.base.cast(), self.len) };
    }
}

#[cfg(test)]
impl Region {
    /// A second, independent mapping of the same memory, as another process would have.
    pub(crate) fn map_again(&self) -> Region {
        let fd = self
            .with_fd(|fd| fd.try_clone_to_owned())
            .expect("the memory file is open")
            .expect("dup the memory file");
        Region::attach(fd).expect("attach a second mapping").0
    }
}
