//! Helpers of the integration tests: a second, independent implementation of the handshake
//! written from the protocol text, so that a raw socket can play a peer that authenticates
//! correctly and then misbehaves.
#![allow(dead_code)] // Each test file uses a different subset.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use sluice_net::Secret;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The secret every test peer shares, as bytes and as a [`Secret`].
pub(crate) const KEY: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

pub(crate) fn secret() -> Secret {
    Secret::from_bytes(KEY).unwrap()
}

pub(crate) fn other_secret() -> Secret {
    Secret::from_bytes(b"another job's secret, 32 bytes!!").unwrap()
}

pub(crate) fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn proof(key: &[u8], label: &[u8], first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(label);
    mac.update(first);
    mac.update(second);
    mac.finalize().into_bytes().to_vec()
}

/// Plays the client's side of the handshake on a raw stream, checking the server's proof.
pub(crate) async fn raw_client_handshake(stream: &mut TcpStream, key: &[u8]) {
    let mut hello = [0u8; 37];
    stream.read_exact(&mut hello).await.unwrap();
    assert_eq!(&hello[..5], b"SLCN\x01");
    let nonce_s = &hello[5..];
    let nonce_c = [0x5a; 32];
    let mut reply = b"SLCN\x01".to_vec();
    reply.extend_from_slice(&nonce_c);
    reply.extend_from_slice(&proof(key, b"sluice client", nonce_s, &nonce_c));
    stream.write_all(&reply).await.unwrap();
    let mut answer = [0u8; 32];
    stream.read_exact(&mut answer).await.unwrap();
    assert_eq!(
        answer.to_vec(),
        proof(key, b"sluice server", &nonce_c, nonce_s)
    );
}

/// Plays the server's side of the handshake on a raw stream; `true` if the client's proof
/// was right (then the server's proof was sent).
pub(crate) async fn raw_server_handshake(stream: &mut TcpStream, key: &[u8]) -> bool {
    let nonce_s = [0xa5; 32];
    let mut hello = b"SLCN\x01".to_vec();
    hello.extend_from_slice(&nonce_s);
    stream.write_all(&hello).await.unwrap();
    let mut reply = [0u8; 69];
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!(&reply[..5], b"SLCN\x01");
    let nonce_c = &reply[5..37];
    if reply[37..].to_vec() != proof(key, b"sluice client", &nonce_s, nonce_c) {
        return false;
    }
    stream
        .write_all(&proof(key, b"sluice server", nonce_c, &nonce_s))
        .await
        .unwrap();
    true
}

/// A frame as the protocol lays it out, with `crc` as its checksum field.
pub(crate) fn raw_frame(payload: &[u8], crc: u32) -> Vec<u8> {
    let mut frame = u32::try_from(payload.len()).unwrap().to_be_bytes().to_vec();
    frame.extend_from_slice(&crc.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// Waits until `done` holds; a watchdog (not a timing assertion) fails the test if it never
/// does.
pub(crate) async fn wait_until(mut done: impl FnMut() -> bool) {
    let watchdog = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), watchdog)
        .await
        .expect("the condition never held");
}

/// `future`'s output, with a watchdog that fails the test instead of hanging it.
pub(crate) async fn within<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("watchdog: the operation never finished")
}
