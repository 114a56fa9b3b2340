//! Where everything lives in the shared region (`docs/shm-protocol.md`, "Memory layout").
//!
//! The engine computes a [`Layout`] once, writes it into the header, and from then on trusts
//! only its own copy. A client reads the header once, at attach, and checks it with
//! [`Layout::from_header`] before touching anything else.

use crate::ShmError;

/// The first eight bytes of the region.
pub(crate) const MAGIC: [u8; 8] = *b"SLUICESH";
/// The protocol version this crate speaks.
pub const VERSION: u32 = 1;
/// Size of the header, and the alignment of every ring.
pub const HEADER_LEN: u64 = 4096;
/// Smallest ring capacity the protocol allows.
pub const MIN_CAPACITY: u64 = 4096;
/// Largest ring capacity this crate creates (1 GiB): far more than batching needs.
pub const MAX_CAPACITY: u64 = 1 << 30;

/// Environment variable naming the region's descriptor in the child.
pub const ENV_FD: &str = "SLUICE_SHM_FD";
/// Environment variable naming the protocol version the engine offers.
pub const ENV_VERSION: &str = "SLUICE_SHM_VERSION";

// Header fields (byte offsets from the start of the region).
pub(crate) const H_MAGIC: usize = 0;
pub(crate) const H_VERSION: usize = 8;
pub(crate) const H_HEADER_LEN: usize = 12;
pub(crate) const H_REGION_LEN: usize = 16;
pub(crate) const H_RINGS: usize = 24;
pub(crate) const H_ENGINE_PID: usize = 28;
pub(crate) const H_INPUT: usize = 32;
pub(crate) const H_OUTPUT: usize = 48;
pub(crate) const H_CHILD_STATE: usize = 64;
pub(crate) const H_ENGINE_STATE: usize = 68;

/// Bit of `rings`: the input ring (engine → child) is present.
pub(crate) const RING_INPUT: u32 = 1;
/// Bit of `rings`: the output ring (child → engine) is present.
pub(crate) const RING_OUTPUT: u32 = 2;

/// `child_state`: the child has not attached (yet).
pub(crate) const CHILD_NOT_ATTACHED: u32 = 0;
/// `child_state`: the child has mapped the region and checked the header.
pub(crate) const CHILD_ATTACHED: u32 = 1;
/// `child_state`: the child closed its rings and is about to exit.
pub(crate) const CHILD_DETACHED: u32 = 2;
/// `engine_state`: the engine gave up on the task; the child should stop.
pub(crate) const ENGINE_ABORTED: u32 = 1;

// Ring control block (byte offsets from the ring's start). Each side's words sit on their
// own 128-byte line, so that the two sides do not contend for a line.
pub(crate) const R_TAIL: usize = 0;
pub(crate) const R_CLOSED: usize = 8;
pub(crate) const R_HEAD: usize = 128;
pub(crate) const R_DATA_SEQ: usize = 256;
pub(crate) const R_CONSUMER_SLEEPING: usize = 260;
pub(crate) const R_SPACE_SEQ: usize = 264;
pub(crate) const R_PRODUCER_SLEEPING: usize = 268;
/// Where a ring's data starts.
pub(crate) const R_DATA: u64 = 384;

/// One ring's place in the region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingLayout {
    /// Offset of the ring's control block from the start of the region.
    pub offset: u64,
    /// Bytes of data the ring holds: a power of two, at least [`MIN_CAPACITY`].
    pub capacity: u64,
}

impl RingLayout {
    /// Bytes the ring occupies in the region, control block included.
    fn span(&self) -> u64 {
        R_DATA + self.capacity
    }
}

/// The region's size and its rings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Size of the whole region in bytes.
    pub region_len: u64,
    /// The ring the engine writes and the child reads, if the job uses one.
    pub input: Option<RingLayout>,
    /// The ring the child writes and the engine reads, if the job uses one.
    pub output: Option<RingLayout>,
}

impl Layout {
    /// Places the rings the job asks for after the header, each on a page boundary.
    ///
    /// # Errors
    /// [`ShmError::Capacity`] if a capacity is not a power of two between [`MIN_CAPACITY`]
    /// and [`MAX_CAPACITY`].
    pub fn new(input: Option<u64>, output: Option<u64>) -> Result<Layout, ShmError> {
        let mut end = HEADER_LEN;
        let mut place = |capacity: Option<u64>| -> Result<Option<RingLayout>, ShmError> {
            let Some(capacity) = capacity else {
                return Ok(None);
            };
            if !capacity.is_power_of_two() || !(MIN_CAPACITY..=MAX_CAPACITY).contains(&capacity) {
                return Err(ShmError::Capacity(capacity));
            }
            let ring = RingLayout {
                offset: end,
                capacity,
            };
            end = (end + ring.span()).next_multiple_of(HEADER_LEN);
            Ok(Some(ring))
        };
        let input = place(input)?;
        let output = place(output)?;
        Ok(Layout {
            region_len: end,
            input,
            output,
        })
    }

    /// The `rings` bits of the header.
    pub(crate) fn ring_bits(&self) -> u32 {
        let mut bits = 0;
        if self.input.is_some() {
            bits |= RING_INPUT;
        }
        if self.output.is_some() {
            bits |= RING_OUTPUT;
        }
        bits
    }

    /// Checks the layout a header describes against the size of the mapping it came from:
    /// every present ring must have a valid capacity and lie inside the region, and the two
    /// rings must not overlap.
    pub(crate) fn from_header(
        mapped_len: u64,
        region_len: u64,
        bits: u32,
        input: RingLayout,
        output: RingLayout,
    ) -> Result<Layout, ShmError> {
        let bad = |what: String| Err(ShmError::BadHeader(what));
        if region_len != mapped_len {
            return bad(format!(
                "region_len is {region_len} but the region is {mapped_len} bytes"
            ));
        }
        if bits & !(RING_INPUT | RING_OUTPUT) != 0 || bits == 0 {
            return bad(format!("ring bits {bits:#x}: expected 1, 2 or 3"));
        }
        let check = |name: &str, ring: RingLayout| -> Result<RingLayout, ShmError> {
            let fits = ring
                .offset
                .checked_add(ring.span())
                .is_some_and(|end| end <= region_len);
            if !ring.capacity.is_power_of_two() || ring.capacity < MIN_CAPACITY {
                Err(ShmError::BadHeader(format!(
                    "the {name} ring's capacity {} is not a power of two of at least {MIN_CAPACITY}",
                    ring.capacity
                )))
            } else if ring.offset < HEADER_LEN || !ring.offset.is_multiple_of(128) || !fits {
                Err(ShmError::BadHeader(format!(
                    "the {name} ring (offset {}, capacity {}) does not lie inside the region of {region_len} bytes",
                    ring.offset, ring.capacity
                )))
            } else {
                Ok(ring)
            }
        };
        let input = (bits & RING_INPUT != 0)
            .then(|| check("input", input))
            .transpose()?;
        let output = (bits & RING_OUTPUT != 0)
            .then(|| check("output", output))
            .transpose()?;
        if let (Some(a), Some(b)) = (input, output) {
            let apart = a.offset + a.span() <= b.offset || b.offset + b.span() <= a.offset;
            if !apart {
                return bad("the input and output rings overlap".into());
            }
        }
        Ok(Layout {
            region_len,
            input,
            output,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_are_page_aligned_and_inside_the_region() {
        let layout = Layout::new(Some(4096), Some(1 << 20)).expect("valid capacities");
        let input = layout.input.expect("input ring");
        let output = layout.output.expect("output ring");
        assert_eq!(input.offset, 4096);
        // 384 bytes of control block push the output ring to the page after two data pages.
        assert_eq!(output.offset, 4096 + 8192);
        assert_eq!(output.offset % 4096, 0);
        assert!(output.offset + 384 + output.capacity <= layout.region_len);
        assert_eq!(layout.region_len % 4096, 0);
        assert_eq!(layout.ring_bits(), 3);
    }

    #[test]
    fn invalid_capacities_are_refused() {
        for capacity in [0, 100, 2048, 4097, 3 << 20, 1 << 31] {
            assert!(
                matches!(Layout::new(Some(capacity), None), Err(ShmError::Capacity(c)) if c == capacity),
                "{capacity}"
            );
        }
    }

    #[test]
    fn a_header_pointing_outside_the_region_is_refused() {
        let layout = Layout::new(Some(4096), Some(4096)).expect("layout");
        let (i, o) = (layout.input.expect("in"), layout.output.expect("out"));
        assert_eq!(
            Layout::from_header(layout.region_len, layout.region_len, 3, i, o).ok(),
            Some(layout)
        );
        let huge = RingLayout {
            offset: 4096,
            capacity: 1 << 62,
        };
        let wrapping = RingLayout {
            offset: u64::MAX - 100,
            capacity: 4096,
        };
        let overlapping = RingLayout {
            offset: i.offset + 128,
            capacity: 4096,
        };
        for (bits, a, b) in [
            (1, huge, o),
            (2, i, wrapping),
            (3, i, overlapping),
            (1, RingLayout { offset: 0, ..i }, o),
        ] {
            assert!(
                Layout::from_header(layout.region_len, layout.region_len, bits, a, b).is_err(),
                "{a:?} {b:?}"
            );
        }
        assert!(Layout::from_header(layout.region_len, 1 << 40, 3, i, o).is_err());
        assert!(Layout::from_header(layout.region_len, layout.region_len, 4, i, o).is_err());
        assert!(Layout::from_header(layout.region_len, layout.region_len, 0, i, o).is_err());
    }
}
