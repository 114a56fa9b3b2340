//! The frame layer: `length (u32 BE) | crc32c (u32 BE) | payload`.

use std::io::IoSlice;
use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{NetError, MAX_FRAME};

/// Bytes before every payload: its length, then its CRC32C, both big-endian `u32`s.
pub const HEADER_LEN: usize = 8;

/// Reads frames from a byte stream.
///
/// It keeps a partly read frame between calls, so [`read_frame`](FrameDecoder::read_frame) is
/// cancel-safe: dropping its future (e.g. in a `select!`) loses no bytes, and the next call
/// carries on. After it returns an error the stream is out of step and must be dropped.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    header: [u8; HEADER_LEN],
    /// How many bytes of `header` have arrived.
    header_filled: usize,
    /// The payload being read, once the header is complete and checked.
    body: Option<Body>,
}

#[derive(Debug)]
struct Body {
    buf: BytesMut,
    len: usize,
    crc: u32,
}

impl FrameDecoder {
    /// A decoder at a frame boundary.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// The next frame's payload, its checksum verified; `None` if the stream ended cleanly
    /// between two frames. `peer` only names the other side in errors.
    ///
    /// It allocates the announced payload length once that is known to be at most
    /// [`MAX_FRAME`], and nothing else: a peer cannot make it allocate more.
    ///
    /// # Errors
    ///
    /// [`NetError::Corrupt`] for a stream that ends inside a frame, a length over
    /// [`MAX_FRAME`] or a checksum mismatch; [`NetError::Io`] if reading fails.
    pub async fn read_frame<R: AsyncRead + Unpin>(
        &mut self,
        reader: &mut R,
        peer: SocketAddr,
    ) -> Result<Option<Bytes>, NetError> {
        let body = match &mut self.body {
            Some(body) => body,
            slot => {
                match read_header(&mut self.header, &mut self.header_filled, reader, peer).await? {
                    Some(body) => slot.insert(body),
                    None => return Ok(None),
                }
            }
        };
        while body.buf.len() < body.len {
            // The limit keeps the read inside this frame and `buf` at its one allocation.
            let missing = body.len - body.buf.len();
            let mut room = (&mut body.buf).limit(missing);
            let n = reader
                .read_buf(&mut room)
                .await
                .map_err(|e| NetError::io(peer, e))?;
            if n == 0 {
                return Err(NetError::corrupt(
                    peer,
                    format!(
                        "connection closed inside a frame ({} of {} payload bytes)",
                        body.buf.len(),
                        body.len
                    ),
                ));
            }
        }
        let actual = crc32c::crc32c(&body.buf);
        let expected = body.crc;
        let payload = std::mem::take(&mut body.buf).freeze();
        self.body = None;
        self.header_filled = 0;
        if actual != expected {
            return Err(NetError::corrupt(
                peer,
                format!(
                    "checksum mismatch on a {}-byte payload: header says {expected:08x}, payload gives {actual:08x}",
                    payload.len()
                ),
            ));
        }
        Ok(Some(payload))
    }
}

/// Reads the rest of a frame header into `header` (`filled` bytes of which have arrived), then
/// checks it and sets up the payload buffer it announces; `None` if the stream ends cleanly
/// before the header's first byte. The progress lives in the caller's decoder, so a cancelled
/// read loses nothing.
async fn read_header<R: AsyncRead + Unpin>(
    header: &mut [u8; HEADER_LEN],
    filled: &mut usize,
    reader: &mut R,
    peer: SocketAddr,
) -> Result<Option<Body>, NetError> {
    while *filled < HEADER_LEN {
        let n = reader
            .read(&mut header[*filled..])
            .await
            .map_err(|e| NetError::io(peer, e))?;
        if n == 0 {
            return match *filled {
                0 => Ok(None),
                got => Err(NetError::corrupt(
                    peer,
                    format!(
                        "connection closed inside a frame header ({got} of {HEADER_LEN} bytes)"
                    ),
                )),
            };
        }
        *filled += n;
    }
    let [l0, l1, l2, l3, c0, c1, c2, c3] = *header;
    let announced = u32::from_be_bytes([l0, l1, l2, l3]);
    let len = usize::try_from(announced)
        .ok()
        .filter(|&len| len <= MAX_FRAME)
        .ok_or_else(|| {
            NetError::corrupt(
                peer,
                format!("frame announces {announced} bytes, over the limit of {MAX_FRAME}"),
            )
        })?;
    Ok(Some(Body {
        buf: BytesMut::with_capacity(len),
        len,
        crc: u32::from_be_bytes([c0, c1, c2, c3]),
    }))
}

/// Writes one frame whose payload is the concatenation of `parts`, with vectored writes (the
/// parts are never copied into one buffer), then flushes. `peer` only names the other side in
/// errors.
///
/// Not cancel-safe: a dropped future may leave half a frame on the stream, which must then be
/// dropped.
///
/// # Errors
///
/// [`NetError::TooLarge`] (before anything is written) if the payload is over [`MAX_FRAME`];
/// [`NetError::Io`] if writing fails.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    parts: &[&[u8]],
    peer: SocketAddr,
) -> Result<(), NetError> {
    let len = parts
        .iter()
        .try_fold(0usize, |sum, part| sum.checked_add(part.len()));
    let too_large = |len| NetError::TooLarge {
        peer: peer.to_string(),
        len,
        max: MAX_FRAME,
    };
    let len = match len {
        Some(len) if len <= MAX_FRAME => len,
        Some(len) => return Err(too_large(len)),
        None => return Err(too_large(usize::MAX)),
    };
    let len32 = u32::try_from(len).map_err(|_| too_large(len))?;
    let crc = parts
        .iter()
        .fold(0, |crc, part| crc32c::crc32c_append(crc, part));
    let mut header = [0u8; HEADER_LEN];
    header[..4].copy_from_slice(&len32.to_be_bytes());
    header[4..].copy_from_slice(&crc.to_be_bytes());

    let mut slices: Vec<IoSlice<'_>> = std::iter::once(&header[..])
        .chain(parts.iter().copied().filter(|part| !part.is_empty()))
        .map(IoSlice::new)
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = writer
            .write_vectored(rest)
            .await
            .map_err(|e| NetError::io(peer, e))?;
        if n == 0 {
            return Err(NetError::io(
                peer,
                std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "the socket accepted no bytes",
                ),
            ));
        }
        IoSlice::advance_slices(&mut rest, n);
    }
    writer.flush().await.map_err(|e| NetError::io(peer, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn peer() -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 2], 7070))
    }

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(f)
    }

    /// Encodes frames into memory with `write_frame`.
    fn encode(payloads: &[Vec<u8>]) -> Vec<u8> {
        block_on(async {
            let mut out = Vec::new();
            for p in payloads {
                write_frame(&mut out, &[p], peer()).await.unwrap();
            }
            out
        })
    }

    /// Decodes every frame of `bytes`, up to the first error.
    fn decode(mut bytes: &[u8]) -> (Vec<Bytes>, Option<NetError>) {
        block_on(async {
            let mut decoder = FrameDecoder::new();
            let mut frames = Vec::new();
            loop {
                match decoder.read_frame(&mut bytes, peer()).await {
                    Ok(Some(f)) => frames.push(f),
                    Ok(None) => return (frames, None),
                    Err(e) => return (frames, Some(e)),
                }
            }
        })
    }

    #[test]
    fn layout_is_length_crc_payload() {
        let bytes = encode(&[b"abc".to_vec()]);
        let crc = crc32c::crc32c(b"abc").to_be_bytes();
        assert_eq!(&bytes[..4], &[0, 0, 0, 3]);
        assert_eq!(&bytes[4..8], &crc);
        assert_eq!(&bytes[8..], b"abc");
        // The empty payload's CRC32C is 0, so an empty frame is eight zero bytes.
        assert_eq!(encode(&[Vec::new()]), vec![0u8; 8]);
    }

    #[test]
    fn flipped_bit_is_a_checksum_error() {
        let mut bytes = encode(&[b"hello".to_vec()]);
        bytes[9] ^= 1;
        let (frames, err) = decode(&bytes);
        assert!(frames.is_empty());
        let err = err.unwrap();
        assert!(matches!(err, NetError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("checksum"), "{err}");
        assert!(err.to_string().contains("10.0.0.2:7070"), "{err}");
    }

    #[test]
    fn oversized_length_is_refused_before_reading() {
        let mut bytes = u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 4]);
        let (_, err) = decode(&bytes);
        let err = err.unwrap();
        assert!(err.to_string().contains("over the limit"), "{err}");
        // Exactly MAX_FRAME is not "over": with no payload it is a truncated frame instead.
        let mut bytes = u32::try_from(MAX_FRAME).unwrap().to_be_bytes().to_vec();
        bytes.extend_from_slice(&[0; 4]);
        let err = decode(&bytes).1.unwrap();
        assert!(
            err.to_string().contains("0 of 8388608 payload bytes"),
            "{err}"
        );
    }

    #[test]
    fn truncation_anywhere_is_corrupt_and_boundary_is_clean() {
        let bytes = encode(&[b"first".to_vec(), b"second".to_vec()]);
        let boundary = HEADER_LEN + 5;
        for cut in 0..=bytes.len() {
            let (frames, err) = decode(&bytes[..cut]);
            match cut {
                0 => assert!(frames.is_empty() && err.is_none()),
                c if c == boundary => assert!(frames.len() == 1 && err.is_none()),
                c if c == bytes.len() => assert!(frames.len() == 2 && err.is_none()),
                _ => assert!(matches!(err, Some(NetError::Corrupt { .. })), "cut {cut}"),
            }
        }
    }

    #[test]
    fn too_large_send_writes_nothing() {
        let big = vec![0u8; MAX_FRAME];
        let mut out = Vec::new();
        let err = block_on(write_frame(&mut out, &[&big, b"x"], peer())).unwrap_err();
        assert!(matches!(err, NetError::TooLarge { len, .. } if len == MAX_FRAME + 1));
        assert!(out.is_empty());
    }

    /// Hands out its bytes `chunk` at a time, as a slow socket would.
    struct Trickle<'a> {
        bytes: &'a [u8],
        chunk: usize,
    }

    impl AsyncRead for Trickle<'_> {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            let n = self.chunk.min(self.bytes.len()).min(buf.remaining());
            let (now, later) = self.bytes.split_at(n);
            buf.put_slice(now);
            self.bytes = later;
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn a_cancelled_read_loses_nothing() {
        let bytes = encode(&[b"first frame".to_vec(), b"second".to_vec()]);
        block_on(async {
            let (mut tx, mut rx) = tokio::io::duplex(1024);
            let mut decoder = FrameDecoder::new();
            // Half a header, then the read is abandoned; then most of the payload, abandoned again.
            for (from, to) in [(0, 3), (3, 15)] {
                tx.write_all(&bytes[from..to]).await.unwrap();
                let read = decoder.read_frame(&mut rx, peer());
                let waited = tokio::time::timeout(std::time::Duration::from_millis(20), read).await;
                assert!(waited.is_err(), "a frame came out of half a frame");
            }
            tx.write_all(&bytes[15..]).await.unwrap();
            drop(tx);
            assert_eq!(
                &decoder.read_frame(&mut rx, peer()).await.unwrap().unwrap()[..],
                b"first frame"
            );
            assert_eq!(
                &decoder.read_frame(&mut rx, peer()).await.unwrap().unwrap()[..],
                b"second"
            );
            assert!(decoder.read_frame(&mut rx, peer()).await.unwrap().is_none());
        });
    }

    proptest! {
        #[test]
        fn frames_arriving_in_pieces_decode_the_same(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..6),
            chunk in 1usize..12,
        ) {
            let bytes = encode(&payloads);
            let frames = block_on(async {
                let mut reader = Trickle { bytes: &bytes, chunk };
                let mut decoder = FrameDecoder::new();
                let mut frames = Vec::new();
                while let Some(f) = decoder.read_frame(&mut reader, peer()).await.unwrap() {
                    frames.push(f.to_vec());
                }
                frames
            });
            prop_assert_eq!(frames, payloads);
        }

        #[test]
        fn arbitrary_streams_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let (frames, _) = decode(&bytes);
            // Whatever was accepted came with a matching checksum and fits its header.
            let consumed: usize = frames.iter().map(|f| HEADER_LEN + f.len()).sum();
            prop_assert!(consumed <= bytes.len());
        }

        #[test]
        fn frames_survive_a_byte_stream(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..8),
            garbage in proptest::collection::vec(any::<u8>(), 1..16),
        ) {
            let bytes = encode(&payloads);
            let (frames, err) = decode(&bytes);
            prop_assert!(err.is_none());
            prop_assert_eq!(frames.iter().map(|f| f.to_vec()).collect::<Vec<_>>(), payloads.clone());
            // The valid frames, then garbage: the frames come out, then an error or (if the
            // garbage happens to be well formed) more frames, but never a panic.
            let mut with_garbage = bytes.clone();
            with_garbage.extend_from_slice(&garbage);
            let (frames, _) = decode(&with_garbage);
            prop_assert!(frames.len() >= payloads.len());
        }
    }
}
