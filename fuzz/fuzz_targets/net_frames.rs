//! Cluster network frames (sluice-net): `length u32 BE | crc32c u32 BE | payload`, at most
//! `MAX_FRAME` bytes. The decoder must return exactly the frames an independent decoder
//! finds, and fail where that one fails, however the bytes arrive: in pieces of any size,
//! with reads that are not ready and whose futures are dropped (the decoder is cancel-safe).
#![no_main]

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use sluice_net::{FrameDecoder, HEADER_LEN, MAX_FRAME};
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `data` in pieces whose sizes `plan` gives; a size of 0 is a read that is not
/// ready (`Pending`), after which the caller drops its future and starts again.
struct Trickle<'a> {
    data: &'a [u8],
    plan: &'a [u8],
    step: usize,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let size = match self.plan.get(self.step) {
            Some(&size) => size,
            None => u8::MAX,
        };
        self.step += 1;
        if size == 0 {
            return Poll::Pending;
        }
        let n = usize::from(size).min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

/// The frames of `data` up to the first bad one, and whether the stream ended cleanly.
fn reference(mut data: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let mut frames = Vec::new();
    while !data.is_empty() {
        let Some((header, rest)) = data.split_first_chunk::<HEADER_LEN>() else {
            return (frames, false);
        };
        let len = u32::from_be_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        if len > MAX_FRAME || rest.len() < len || crc32c::crc32c(&rest[..len]) != crc {
            return (frames, false);
        }
        frames.push(rest[..len].to_vec());
        data = &rest[len..];
    }
    (frames, true)
}

/// Rewrites the checksum of every complete frame, so that most frames are valid.
fn fix_checksums(data: &mut [u8]) {
    let mut at = 0;
    while data.len() - at >= HEADER_LEN {
        let len = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]) as usize;
        let start = at + HEADER_LEN;
        if len > data.len() - start {
            return;
        }
        let crc = crc32c::crc32c(&data[start..start + len]);
        data[at + 4..at + 8].copy_from_slice(&crc.to_be_bytes());
        at = start + len;
    }
}

fuzz_target!(|input: &[u8]| {
    let [mode, plan_len, rest @ ..] = input else {
        return;
    };
    let (plan, data) = rest.split_at(usize::from(*plan_len).min(rest.len()));
    let mut data = data.to_vec();
    if mode & 1 == 1 {
        fix_checksums(&mut data);
    }
    let (expected, clean) = reference(&data);

    let peer = SocketAddr::from(([127, 0, 0, 1], 1));
    let mut reader = Trickle {
        data: &data,
        plan,
        step: 0,
    };
    let mut decoder = FrameDecoder::new();
    let mut cx = Context::from_waker(Waker::noop());
    let mut frames = Vec::new();
    let ended = loop {
        let mut read = Box::pin(decoder.read_frame(&mut reader, peer));
        match read.as_mut().poll(&mut cx) {
            // Not ready: the future is dropped here, and a new one carries on.
            Poll::Pending => continue,
            Poll::Ready(Ok(Some(frame))) => frames.push(frame.to_vec()),
            Poll::Ready(Ok(None)) => break true,
            Poll::Ready(Err(_)) => break false,
        }
    };
    assert_eq!(frames, expected);
    assert_eq!(ended, clean);
});
