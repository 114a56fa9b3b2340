//! Frames over real sockets on 127.0.0.1: round trips, vectored sends, streams of frames,
//! split halves, and peers that authenticate and then send damaged frames.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use sluice_net::{
    connect, Acceptor, Connection, FramedConnection, Listener, NetError, Tcp, Transport, MAX_FRAME,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A listener and a connected pair: (client side, server side).
async fn pair() -> (Listener, Connection, Connection) {
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let client = connect(listener.local_addr(), &secret(), Duration::from_secs(10))
        .await
        .unwrap();
    let server = within(listener.accept()).await.unwrap();
    (listener, client, server)
}

/// A payload whose bytes depend on their position, so a shifted or reordered byte shows.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| u8::try_from(i % 251).unwrap() ^ seed)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn round_trip_of_every_size_both_ways() {
    let (listener, mut client, mut server) = pair().await;
    assert_eq!(client.peer(), listener.local_addr());
    for (i, len) in [0, 1, 1 << 20, MAX_FRAME].into_iter().enumerate() {
        let payload = pattern(len, u8::try_from(i).unwrap());
        // Sent from a task, since a frame larger than the socket buffers needs the reader
        // running at the same time.
        let sent = payload.clone();
        let sender = tokio::spawn(async move {
            client.send(&sent).await.unwrap();
            client
        });
        let got = within(server.recv()).await.unwrap().unwrap();
        assert_eq!(got.len(), len);
        assert!(got[..] == payload[..], "payload of {len} bytes differs");
        client = sender.await.unwrap();

        let back = payload.clone();
        let echo = tokio::spawn(async move {
            server.send(&back).await.unwrap();
            server
        });
        let got = within(client.recv()).await.unwrap().unwrap();
        assert!(got[..] == payload[..], "echo of {len} bytes differs");
        server = echo.await.unwrap();
    }
    drop(client);
    assert_eq!(within(server.recv()).await.unwrap(), None);
}

#[tokio::test]
async fn send_parts_puts_the_same_bytes_on_the_wire_as_send() {
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let addr = raw.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut stream, _) = raw.accept().await.unwrap();
        assert!(raw_server_handshake(&mut stream, KEY).await);
        let mut wire = Vec::new();
        stream.read_to_end(&mut wire).await.unwrap();
        wire
    });
    let mut client = connect(addr, &secret(), Duration::from_secs(10))
        .await
        .unwrap();
    let parts: [&[u8]; 5] = [b"map ", b"", b"task ", b"7 done", b""];
    let whole = parts.concat();
    client.send_parts(&parts).await.unwrap();
    client.send(&whole).await.unwrap();
    client.send_parts(&[]).await.unwrap();
    drop(client);
    let wire = within(peer).await.unwrap();

    let one = raw_frame(&whole, crc32c::crc32c(&whole));
    let mut expected = one.clone();
    expected.extend_from_slice(&one);
    expected.extend_from_slice(&raw_frame(b"", 0));
    assert_eq!(wire, expected);
}

#[tokio::test]
async fn send_parts_arrives_as_one_frame() {
    let (_listener, mut client, mut server) = pair().await;
    // 43 parts, more than one vectored write may take at once on a full socket.
    let sender = tokio::spawn(async move {
        let big = pattern(300_000, 3);
        let parts: Vec<&[u8]> = big.chunks(7_001).collect();
        client.send_parts(&parts).await.unwrap();
        client
    });
    let got = within(server.recv()).await.unwrap().unwrap();
    assert_eq!(got.len(), 300_000);
    assert!(got[..] == pattern(300_000, 3)[..]);
    drop(sender.await.unwrap());
}

#[tokio::test(flavor = "multi_thread")]
async fn many_frames_in_a_row_arrive_in_order() {
    let (_listener, mut client, mut server) = pair().await;
    const FRAMES: usize = 5_000;
    let sender = tokio::spawn(async move {
        for i in 0..FRAMES {
            let payload = pattern(i % 700, u8::try_from(i % 256).unwrap());
            client.send(&payload).await.unwrap();
        }
    });
    for i in 0..FRAMES {
        let got = within(server.recv()).await.unwrap().unwrap();
        assert!(
            got[..] == pattern(i % 700, u8::try_from(i % 256).unwrap())[..],
            "frame {i}"
        );
    }
    sender.await.unwrap();
    assert_eq!(within(server.recv()).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread")]
async fn split_halves_ping_pong_from_separate_tasks() {
    let (_listener, client, server) = pair().await;
    const ROUNDS: u32 = 500;

    // The server echoes: one task reads, another writes, joined by a channel.
    let (mut server_rx, mut server_tx) = server.split();
    let (to_writer, mut from_reader) = tokio::sync::mpsc::channel(4);
    let server_reader = tokio::spawn(async move {
        while let Some(frame) = server_rx.recv().await.unwrap() {
            to_writer.send(frame).await.unwrap();
        }
    });
    let server_writer = tokio::spawn(async move {
        while let Some(frame) = from_reader.recv().await {
            let n = u32::from_be_bytes(frame[..].try_into().unwrap());
            server_tx
                .send_parts(&[b"pong", &(n + 1).to_be_bytes()])
                .await
                .unwrap();
        }
    });

    // The client pings from one task and checks the pongs in another.
    let (mut client_rx, mut client_tx) = client.split();
    let pinger = tokio::spawn(async move {
        for n in 0..ROUNDS {
            client_tx.send(&n.to_be_bytes()).await.unwrap();
        }
        // Dropping the writer closes the client's sending direction only: pongs still arrive.
    });
    let mut seen = 0;
    while let Some(frame) = within(client_rx.recv()).await.unwrap() {
        assert_eq!(&frame[..4], b"pong");
        assert_eq!(u32::from_be_bytes(frame[4..].try_into().unwrap()), seen + 1);
        seen += 1;
    }
    assert_eq!(seen, ROUNDS);
    pinger.await.unwrap();
    server_reader.await.unwrap();
    server_writer.await.unwrap();
}

#[tokio::test]
async fn oversized_send_is_refused_and_the_connection_stays_usable() {
    let (_listener, mut client, mut server) = pair().await;
    let big = vec![1u8; MAX_FRAME];
    let err = client.send_parts(&[&big, b"!"]).await.unwrap_err();
    assert!(
        matches!(err, NetError::TooLarge { len, .. } if len == MAX_FRAME + 1),
        "{err}"
    );
    client.send(b"still fine").await.unwrap();
    assert_eq!(
        &within(server.recv()).await.unwrap().unwrap()[..],
        b"still fine"
    );
}

/// Connects a raw socket to a listener, authenticates by hand, writes `bytes` and closes; the
/// listener's side of that connection.
async fn after_raw_frames(bytes: &[u8]) -> Connection {
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let mut raw = TcpStream::connect(listener.local_addr()).await.unwrap();
    raw_client_handshake(&mut raw, KEY).await;
    let server = within(listener.accept()).await.unwrap();
    raw.write_all(bytes).await.unwrap();
    drop(raw);
    server
}

fn assert_corrupt(result: Result<Option<bytes::Bytes>, NetError>, needle: &str) {
    match result {
        Err(err @ NetError::Corrupt { .. }) => {
            let text = err.to_string();
            assert!(text.contains(needle), "{text}");
            assert!(text.contains("127.0.0.1"), "{text}");
        }
        other => panic!("expected a Corrupt error about {needle:?}, got {other:?}"),
    }
}

#[tokio::test]
async fn bad_checksum_is_corrupt() {
    let mut bytes = raw_frame(b"good", crc32c::crc32c(b"good"));
    bytes.extend_from_slice(&raw_frame(b"evil", crc32c::crc32c(b"evil") ^ 1));
    let mut server = after_raw_frames(&bytes).await;
    assert_eq!(&within(server.recv()).await.unwrap().unwrap()[..], b"good");
    assert_corrupt(within(server.recv()).await, "checksum mismatch");
}

#[tokio::test]
async fn truncated_payload_is_corrupt() {
    let frame = raw_frame(&[7; 100], crc32c::crc32c(&[7; 100]));
    let mut server = after_raw_frames(&frame[..8 + 10]).await;
    assert_corrupt(within(server.recv()).await, "10 of 100 payload bytes");
}

#[tokio::test]
async fn truncated_header_is_corrupt() {
    let mut server = after_raw_frames(&[0, 0, 1]).await;
    assert_corrupt(within(server.recv()).await, "3 of 8 bytes");
}

#[tokio::test]
async fn length_over_max_frame_is_corrupt() {
    let mut header = u32::MAX.to_be_bytes().to_vec();
    header.extend_from_slice(&[0; 4]);
    let mut server = after_raw_frames(&header).await;
    assert_corrupt(
        within(server.recv()).await,
        "4294967295 bytes, over the limit",
    );

    let mut header = u32::try_from(MAX_FRAME + 1).unwrap().to_be_bytes().to_vec();
    header.extend_from_slice(&[0; 4]);
    let mut server = after_raw_frames(&header).await;
    assert_corrupt(within(server.recv()).await, "over the limit");
}

#[tokio::test]
async fn a_connecting_side_checks_frames_too() {
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let addr = raw.local_addr().unwrap();
    let peer = tokio::spawn(async move {
        let (mut stream, _) = raw.accept().await.unwrap();
        assert!(raw_server_handshake(&mut stream, KEY).await);
        stream
            .write_all(&raw_frame(b"evil", crc32c::crc32c(b"good")))
            .await
            .unwrap();
        stream
    });
    let mut client = connect(addr, &secret(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_corrupt(within(client.recv()).await, "checksum mismatch");
    drop(peer.await.unwrap());
}

/// Code written against the trait, as the cluster code will be.
async fn echo_once<T: Transport>(transport: T) -> Vec<u8> {
    let listener = transport.bind(localhost(), secret()).await.unwrap();
    let mut client = transport
        .connect(listener.local_addr(), &secret(), Duration::from_secs(10))
        .await
        .unwrap();
    let mut server = listener.accept().await.unwrap();
    client.send_parts(&[b"via ", b"trait"]).await.unwrap();
    let got = server.recv().await.unwrap().unwrap();
    server.send(&got).await.unwrap();
    assert_eq!(server.peer().ip(), listener.local_addr().ip());
    client.recv().await.unwrap().unwrap().to_vec()
}

#[tokio::test]
async fn tcp_implements_the_transport_trait() {
    assert_eq!(within(echo_once(Tcp)).await, b"via trait");
}
