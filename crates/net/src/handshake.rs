//! The mutual challenge-response that opens every connection (see the crate docs).

use std::net::SocketAddr;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{NetError, Secret};

/// The first bytes each side sends.
const MAGIC: &[u8; 4] = b"SLCN";
/// The protocol version; a peer sending another is refused.
const VERSION: u8 = 1;
const NONCE_LEN: usize = 32;
const MAC_LEN: usize = 32;
const GREETING_LEN: usize = MAGIC.len() + 1;
/// Magic, version, nonce_s.
const SERVER_HELLO_LEN: usize = GREETING_LEN + NONCE_LEN;
/// Magic, version, nonce_c, the client's proof.
const CLIENT_HELLO_LEN: usize = GREETING_LEN + NONCE_LEN + MAC_LEN;
/// What the client's proof is computed over, before the nonces: distinct labels per direction
/// so that neither side's proof can be replayed as the other's.
const CLIENT_LABEL: &[u8] = b"sluice client";
/// What the server's proof is computed over, before the nonces.
const SERVER_LABEL: &[u8] = b"sluice server";

type HmacSha256 = Hmac<Sha256>;

/// Runs the listening side of the handshake on `stream`.
pub(crate) async fn server<S>(
    stream: &mut S,
    secret: &Secret,
    peer: SocketAddr,
) -> Result<(), NetError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let nonce_s = nonce()?;
    let mut hello = [0u8; SERVER_HELLO_LEN];
    hello[..MAGIC.len()].copy_from_slice(MAGIC);
    hello[MAGIC.len()] = VERSION;
    hello[GREETING_LEN..].copy_from_slice(&nonce_s);
    write(stream, &hello, peer).await?;

    let mut reply = [0u8; CLIENT_HELLO_LEN];
    read_hello(stream, &mut reply, peer).await?;
    let (nonce_c, proof) = reply[GREETING_LEN..].split_at(NONCE_LEN);
    proof_mac(secret, CLIENT_LABEL, &nonce_s, nonce_c)?
        .verify_slice(proof)
        .map_err(|_| {
            NetError::auth(
                peer,
                "the client's proof does not match: it does not know the secret (the cluster's, or the job's for a shuffle)",
            )
        })?;

    let answer = proof_mac(secret, SERVER_LABEL, nonce_c, &nonce_s)?
        .finalize()
        .into_bytes();
    write(stream, &answer, peer).await
}

/// Runs the connecting side of the handshake on `stream`.
pub(crate) async fn client<S>(
    stream: &mut S,
    secret: &Secret,
    peer: SocketAddr,
) -> Result<(), NetError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut hello = [0u8; SERVER_HELLO_LEN];
    read_hello(stream, &mut hello, peer).await?;
    let nonce_s = &hello[GREETING_LEN..];

    let nonce_c = nonce()?;
    let mut reply = [0u8; CLIENT_HELLO_LEN];
    reply[..MAGIC.len()].copy_from_slice(MAGIC);
    reply[MAGIC.len()] = VERSION;
    reply[GREETING_LEN..GREETING_LEN + NONCE_LEN].copy_from_slice(&nonce_c);
    let proof = proof_mac(secret, CLIENT_LABEL, nonce_s, &nonce_c)?
        .finalize()
        .into_bytes();
    reply[GREETING_LEN + NONCE_LEN..].copy_from_slice(&proof);
    write(stream, &reply, peer).await?;

    let mut answer = [0u8; MAC_LEN];
    let got = read_full(stream, &mut answer, peer).await?;
    if got < MAC_LEN {
        // A listener closes the connection when the client's proof is wrong, so this is what a
        // secret mismatch looks like from here.
        return Err(NetError::auth(
            peer,
            "the listener closed the connection instead of proving the secret: \
             the secrets differ, or it is not a sluice listener",
        ));
    }
    proof_mac(secret, SERVER_LABEL, &nonce_c, nonce_s)?
        .verify_slice(&answer)
        .map_err(|_| {
            NetError::auth(
                peer,
                "the listener's proof does not match: it does not know the secret (the cluster's, or the job's for a shuffle)",
            )
        })
}

/// HMAC-SHA256(secret, label || first || second), ready to finalize or verify.
fn proof_mac(
    secret: &Secret,
    label: &[u8],
    first: &[u8],
    second: &[u8],
) -> Result<HmacSha256, NetError> {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).map_err(|e| NetError::Secret {
        reason: format!("cannot key HMAC-SHA256 with it: {e}"),
    })?;
    mac.update(label);
    mac.update(first);
    mac.update(second);
    Ok(mac)
}

/// A fresh nonce from the operating system's generator: a proof is then good for one
/// connection only.
fn nonce() -> Result<[u8; NONCE_LEN], NetError> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|e| NetError::Secret {
        reason: format!("the system's random number generator failed: {e}"),
    })?;
    Ok(nonce)
}

/// Fills `hello` with the peer's hello, refusing a wrong magic or version as soon as its first
/// bytes arrive, naming what was received.
async fn read_hello<S>(stream: &mut S, hello: &mut [u8], peer: SocketAddr) -> Result<(), NetError>
where
    S: AsyncRead + Unpin,
{
    let got = read_full(stream, &mut hello[..GREETING_LEN], peer).await?;
    let greeting = &hello[..got];
    if got < GREETING_LEN
        || greeting[..MAGIC.len()] != MAGIC[..]
        || greeting[MAGIC.len()] != VERSION
    {
        let what = if got < GREETING_LEN && MAGIC.starts_with(greeting) {
            format!("connection closed after {got} bytes of the greeting")
        } else {
            format!(
                "expected magic \"SLCN\" and version {VERSION}, received {} ({got} bytes)",
                hex(greeting)
            )
        };
        return Err(NetError::auth(peer, what));
    }
    let rest = hello.len() - GREETING_LEN;
    let got = read_full(stream, &mut hello[GREETING_LEN..], peer).await?;
    if got < rest {
        return Err(NetError::auth(
            peer,
            format!(
                "connection closed inside the handshake ({got} of {rest} bytes after the greeting)"
            ),
        ));
    }
    Ok(())
}

/// Reads until `buf` is full or the stream ends; how many bytes arrived.
async fn read_full<S>(stream: &mut S, buf: &mut [u8], peer: SocketAddr) -> Result<usize, NetError>
where
    S: AsyncRead + Unpin,
{
    let mut filled = 0;
    while filled < buf.len() {
        match stream.read(&mut buf[filled..]).await {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) => return Err(NetError::io(peer, e)),
        }
    }
    Ok(filled)
}

async fn write<S>(stream: &mut S, bytes: &[u8], peer: SocketAddr) -> Result<(), NetError>
where
    S: AsyncWrite + Unpin,
{
    stream
        .write_all(bytes)
        .await
        .map_err(|e| NetError::io(peer, e))
}

/// `bytes` as `0x…` hex, for error messages (the caller passes a few bytes only).
fn hex(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 1))
    }

    #[tokio::test]
    async fn both_sides_agree_in_memory() {
        let secret = Secret::from_bytes(&[9; 32]).unwrap();
        let (mut a, mut b) = tokio::io::duplex(256);
        let (s, c) = tokio::join!(
            server(&mut a, &secret, peer()),
            client(&mut b, &secret, peer())
        );
        s.unwrap();
        c.unwrap();
    }

    #[tokio::test]
    async fn proofs_depend_on_the_secret() {
        let (mut a, mut b) = tokio::io::duplex(256);
        let good = Secret::from_bytes(&[9; 32]).unwrap();
        let bad = Secret::from_bytes(&[8; 32]).unwrap();
        let (s, c) = tokio::join!(
            async {
                let r = server(&mut a, &good, peer()).await;
                drop(a);
                r
            },
            client(&mut b, &bad, peer())
        );
        assert!(matches!(s, Err(NetError::Auth { .. })), "{s:?}");
        assert!(matches!(c, Err(NetError::Auth { .. })), "{c:?}");
    }

    #[tokio::test]
    async fn wrong_version_is_named() {
        let secret = Secret::from_bytes(&[9; 32]).unwrap();
        let (mut a, mut b) = tokio::io::duplex(256);
        b.write_all(b"SLCN\x02").await.unwrap();
        let err = server(&mut a, &secret, peer())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("0x534c434e02"), "{err}");
    }
}
