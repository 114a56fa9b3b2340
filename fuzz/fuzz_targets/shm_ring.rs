//! The shm rings' counters as the engine sees them: a hostile child publishes any `head` on
//! the input ring and any `tail` on the output ring. The engine must copy exactly what a
//! model of the protocol allows, and answer every impossible counter with a violation, never
//! with a read or write outside the ring (AddressSanitizer watches the copies).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_shm::fuzzing::HostilePeer;
use sluice_shm::ShmError;

/// What the engine should know of one ring.
#[derive(Default)]
struct Model {
    /// Bytes the engine has moved (written to input, read from output).
    moved: u64,
    /// The peer's counter as the engine last accepted it.
    accepted: u64,
    /// The peer's counter as it is in shared memory now.
    published: u64,
}

fn take<const N: usize>(data: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = data.split_first_chunk::<N>()?;
    *data = rest;
    Some(*head)
}

fuzz_target!(|input: &[u8]| {
    let mut data = input;
    let Some([shift]) = take::<1>(&mut data) else {
        return;
    };
    // 4 KiB to 64 KiB: small rings wrap often.
    let capacity = 4096u64 << (shift % 5);
    let mut peer = HostilePeer::new(capacity).expect("region");
    assert_eq!(peer.capacity(), capacity);
    let (mut input_ring, mut output_ring) = (Model::default(), Model::default());
    let mut buf = vec![0u8; 3 * capacity as usize];
    while let Some([op, a, b]) = take::<3>(&mut data) {
        // A length up to 3 capacities; or a counter: far from the model's or right at the
        // edges the engine must check (a capacity ahead, or the model's own value), give or
        // take a little.
        let len = usize::from(u16::from_le_bytes([a, b])) % buf.len();
        let near = |base: u64| -> u64 {
            let delta = u64::from(u16::from_le_bytes([a, b])) << ((op >> 4 & 3) * 4);
            let small = i64::from(a as i8);
            match op >> 2 & 3 {
                0 => base.wrapping_add(delta),
                1 => base.wrapping_sub(delta),
                2 => base.wrapping_add(capacity).wrapping_add_signed(small),
                _ => base.wrapping_add_signed(small),
            }
        };
        match op & 3 {
            0 => {
                let m = &mut input_ring;
                let result = peer.engine_write(&buf[..len]);
                let expected = if len == 0 {
                    Ok(0)
                } else {
                    let free = |m: &Model| capacity - (m.moved - m.accepted);
                    let mut outcome = Ok(());
                    if free(m) < len as u64 {
                        if m.published >= m.accepted && m.published <= m.moved {
                            m.accepted = m.published;
                        } else {
                            outcome = Err("violation");
                        }
                    }
                    match outcome {
                        Err(e) => Err(e),
                        Ok(()) if free(m) == 0 => Err("full"),
                        Ok(()) => Ok(len.min(free(m) as usize)),
                    }
                };
                match (&result, expected) {
                    (Ok(n), Ok(e)) => {
                        assert_eq!(*n, e);
                        m.moved += *n as u64;
                    }
                    (Err(ShmError::Violation(_)), Err("violation")) => {}
                    (Err(ShmError::Stopped), Err("full")) => {}
                    _ => panic!("write of {len}: got {result:?}, expected {expected:?}"),
                }
                assert_eq!(peer.engine_written(), m.moved);
            }
            1 => {
                let m = &mut output_ring;
                let result = peer.engine_read(&mut buf[..len]);
                let mut violation = false;
                if m.accepted == m.moved {
                    if m.published >= m.accepted && m.published - m.moved <= capacity {
                        m.accepted = m.published;
                    } else {
                        violation = true;
                    }
                }
                match result {
                    Ok(n) => {
                        assert!(!violation, "tail {} accepted", m.published);
                        assert_eq!(n as u64, (m.accepted - m.moved).min(len as u64));
                        m.moved += n as u64;
                    }
                    Err(ShmError::Violation(_)) => {
                        assert!(violation, "tail {} refused", m.published)
                    }
                    Err(e) => panic!("read: {e}"),
                }
                assert_eq!(peer.engine_consumed(), m.moved);
                assert!(m.moved <= m.accepted);
            }
            2 => {
                let m = &mut input_ring;
                m.published = if op & 0x80 != 0 {
                    near(m.moved)
                } else {
                    near(m.accepted)
                };
                peer.set_input_head(m.published);
            }
            _ => {
                let m = &mut output_ring;
                m.published = if op & 0x80 != 0 {
                    near(m.moved)
                } else {
                    near(m.accepted)
                };
                peer.set_output_tail(m.published);
            }
        }
    }
});
