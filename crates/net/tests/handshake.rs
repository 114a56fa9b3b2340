//! The handshake over real sockets on 127.0.0.1: wrong secrets on either side, peers that do
//! not speak the protocol or say nothing, and a listener that keeps serving good peers
//! meanwhile.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use sluice_net::{connect, Listener, NetError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Asserts that `listener` yields no peer for a while.
async fn assert_nothing_accepted(listener: &Listener) {
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "the listener yielded a peer: {accepted:?}"
    );
}

/// Proves the listener still serves a good peer: it connects, and a frame goes through.
async fn good_peer_gets_through(listener: &Listener) {
    let mut client = connect(listener.local_addr(), &secret(), CONNECT_TIMEOUT)
        .await
        .unwrap();
    let mut server = within(listener.accept()).await.unwrap();
    client.send(b"hello").await.unwrap();
    assert_eq!(&within(server.recv()).await.unwrap().unwrap()[..], b"hello");
}

#[tokio::test]
async fn wrong_secret_is_refused_and_not_yielded() {
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let err = connect(listener.local_addr(), &other_secret(), CONNECT_TIMEOUT)
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::Auth { .. }), "{err}");
    assert!(
        err.to_string().contains(&listener.local_addr().to_string()),
        "{err}"
    );

    wait_until(|| listener.rejected() == 1).await;
    let reasons = listener.rejections();
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].contains("client's proof does not match"),
        "{reasons:?}"
    );
    assert_nothing_accepted(&listener).await;

    good_peer_gets_through(&listener).await;
    assert_eq!(listener.rejected(), 1);
}

#[tokio::test]
async fn a_listener_without_the_secret_is_refused() {
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let addr = raw.local_addr().unwrap();
    // A listener keyed with another secret: it rejects the client's proof and hangs up.
    let impostor = tokio::spawn(async move {
        let (mut stream, _) = raw.accept().await.unwrap();
        raw_server_handshake(&mut stream, other_secret_key()).await
    });
    let err = connect(addr, &secret(), CONNECT_TIMEOUT).await.unwrap_err();
    assert!(matches!(err, NetError::Auth { .. }), "{err}");
    assert!(!within(impostor).await.unwrap());
}

#[tokio::test]
async fn a_listener_that_answers_with_a_wrong_proof_is_refused() {
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let addr = raw.local_addr().unwrap();
    // It follows the protocol but cannot compute the server's proof: it replays the
    // client's own proof, which the distinct labels make useless.
    let impostor = tokio::spawn(async move {
        let (mut stream, _) = raw.accept().await.unwrap();
        let mut hello = b"SLCN\x01".to_vec();
        hello.extend_from_slice(&[1; 32]);
        stream.write_all(&hello).await.unwrap();
        let mut reply = [0u8; 69];
        stream.read_exact(&mut reply).await.unwrap();
        stream.write_all(&reply[37..]).await.unwrap();
        stream
    });
    let err = connect(addr, &secret(), CONNECT_TIMEOUT).await.unwrap_err();
    assert!(
        matches!(&err, NetError::Auth { reason, .. } if reason.contains("listener's proof")),
        "{err}"
    );
    drop(within(impostor).await.unwrap());
}

#[tokio::test]
async fn a_server_speaking_another_protocol_is_named() {
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let addr = raw.local_addr().unwrap();
    let other = tokio::spawn(async move {
        let (mut stream, _) = raw.accept().await.unwrap();
        stream.write_all(b"SSH-2.0-OpenSSH_9.6\r\n").await.unwrap();
        stream
    });
    let err = connect(addr, &secret(), CONNECT_TIMEOUT).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, NetError::Auth { .. }), "{text}");
    // "SSH-2" in hex: what was received, shortly.
    assert!(text.contains("0x5353482d32"), "{text}");
    drop(within(other).await.unwrap());
}

#[tokio::test]
async fn garbage_is_rejected_and_hung_up_on() {
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let mut raw = TcpStream::connect(listener.local_addr()).await.unwrap();
    let mut hello = [0u8; 37];
    within(raw.read_exact(&mut hello)).await.unwrap();
    assert_eq!(&hello[..5], b"SLCN\x01");
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    // The listener hangs up: the end of the stream, or a reset since it left our request
    // unread.
    let mut rest = Vec::new();
    match within(raw.read_to_end(&mut rest)).await {
        Ok(n) => assert_eq!(n, 0),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset),
    }

    wait_until(|| listener.rejected() == 1).await;
    let reason = &listener.rejections()[0];
    assert!(reason.contains("handshake with 127.0.0.1:"), "{reason}");
    assert!(reason.contains("0x474554202f"), "{reason}");
    assert_nothing_accepted(&listener).await;
    good_peer_gets_through(&listener).await;
}

#[tokio::test]
async fn a_peer_closing_inside_the_handshake_is_rejected() {
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let mut raw = TcpStream::connect(listener.local_addr()).await.unwrap();
    raw.write_all(b"SLCN\x01short").await.unwrap();
    raw.shutdown().await.unwrap();
    wait_until(|| listener.rejected() == 1).await;
    let reason = &listener.rejections()[0];
    assert!(reason.contains("closed inside the handshake"), "{reason}");
    drop(raw);
    good_peer_gets_through(&listener).await;
}

#[tokio::test]
async fn a_silent_peer_times_out() {
    let listener = Listener::bind(localhost(), secret())
        .await
        .unwrap()
        .with_handshake_timeout(Duration::from_millis(200));
    let mut raw = TcpStream::connect(listener.local_addr()).await.unwrap();
    wait_until(|| listener.rejected() == 1).await;
    let reason = &listener.rejections()[0];
    assert!(reason.contains("handshake with 127.0.0.1:"), "{reason}");
    assert!(reason.contains("timed out"), "{reason}");
    // The listener hung up on it after its hello.
    let mut received = Vec::new();
    within(raw.read_to_end(&mut received)).await.unwrap();
    assert_eq!(received.len(), 37);
    assert_nothing_accepted(&listener).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn silent_peers_do_not_delay_good_ones() {
    // The default timeout of 10 s: the silent peers stay pending for the whole test.
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(TcpStream::connect(listener.local_addr()).await.unwrap());
    }
    for _ in 0..3 {
        good_peer_gets_through(&listener).await;
    }
    // Nobody was rejected: the silent peers are still pending, not timed out.
    assert_eq!(listener.rejected(), 0);
    drop(silent);
}

/// A flood of silent connections past the listener's 256 handshakes at once: the oldest are
/// given up for newer peers, so a good peer gets through at once instead of waiting behind
/// the flood until its handshakes time out (here a minute).
#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_silent_peers_does_not_keep_good_ones_out() {
    let listener = Listener::bind(localhost(), secret())
        .await
        .unwrap()
        .with_handshake_timeout(Duration::from_secs(60));
    let mut silent = Vec::new();
    for _ in 0..400 {
        silent.push(TcpStream::connect(listener.local_addr()).await.unwrap());
    }
    // At least the 144 past the limit were given up, each said so.
    wait_until(|| listener.rejected() >= 144).await;
    let reason = listener.rejections().pop().unwrap();
    assert!(reason.contains("given up for a newer peer"), "{reason}");
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(5), good_peer_gets_through(&listener))
            .await
            .expect("a good peer got through while the flood was pending");
    }
    drop(silent);
}

#[tokio::test]
async fn connect_gives_up_on_a_silent_listener() {
    // A socket that accepts (the kernel does) but never says anything.
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let err = connect(
        raw.local_addr().unwrap(),
        &secret(),
        Duration::from_millis(200),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, NetError::Timeout { what, .. } if what.contains("handshake")),
        "{err}"
    );
    drop(raw);
}

#[tokio::test]
async fn connection_refused_is_io_and_names_the_address_and_the_reason() {
    let raw = TcpListener::bind(localhost()).await.unwrap();
    let addr = raw.local_addr().unwrap();
    drop(raw);
    let err = connect(addr, &secret(), CONNECT_TIMEOUT).await.unwrap_err();
    assert!(matches!(err, NetError::Io { .. }), "{err}");
    // Callers format the error with `{}`: the operating system's reason must be in it, once.
    let text = err.to_string();
    assert!(text.contains(&addr.to_string()), "{text}");
    assert_eq!(text.matches("refused").count(), 1, "{text}");
    assert!(std::error::Error::source(&err).is_none(), "{text}");
}

#[tokio::test]
async fn dropping_the_listener_closes_its_port() {
    let listener = Listener::bind(localhost(), secret()).await.unwrap();
    let addr = listener.local_addr();
    drop(listener);
    // The accepting task ends asynchronously; the port closes with it.
    wait_until(|| std::net::TcpStream::connect(addr).is_err()).await;
}

#[tokio::test]
async fn bind_failure_names_the_address_and_the_reason() {
    let taken = Listener::bind(localhost(), secret()).await.unwrap();
    let err = Listener::bind(taken.local_addr(), secret())
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::Bind { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&taken.local_addr().to_string()), "{text}");
    assert!(text.contains("in use"), "{text}");
}

fn other_secret_key() -> &'static [u8] {
    b"another job's secret, 32 bytes!!"
}
