use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle, JoinSet};

use crate::conn::{Connection, Role};
use crate::{NetError, Secret};

/// How long a peer has to complete the handshake unless
/// [`with_handshake_timeout`](Listener::with_handshake_timeout) says otherwise.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes running at once. Past it, the oldest handshake still under way is given up for
/// the newest peer: a flood of silent connections costs bounded memory, and cannot keep a
/// job's own peers (whose handshakes take a round trip) waiting behind it until the flood's
/// handshakes time out.
const MAX_PENDING_HANDSHAKES: usize = 256;
/// Authenticated peers waiting for [`Listener::accept`].
const READY_QUEUE: usize = 64;
/// How many rejection reasons are kept for [`Listener::rejections`].
const KEPT_REJECTIONS: usize = 16;
/// Pause after a failed `accept(2)` that is not about one peer (e.g. out of file descriptors),
/// so the loop does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Listens for authenticated peers.
///
/// Connections are accepted and their handshakes run by a background task, each handshake in
/// its own task bounded by the handshake timeout, so a silent or slow peer never delays others.
/// With 256 handshakes under way, a new peer takes the place of the one waiting longest, which
/// is dropped and counted as rejected; a peer that passed is never dropped, though one given
/// up as it sends its last handshake message may see the connection close once it thinks it
/// is in.
/// [`accept`](Listener::accept) only yields peers that completed the handshake. A peer that
/// fails it is dropped, counted in [`rejected`](Listener::rejected), and its error kept among
/// the last few [`rejections`](Listener::rejections) for the caller to log.
///
/// Dropping the listener closes the listening socket and abandons handshakes under way.
#[derive(Debug)]
pub struct Listener {
    local: SocketAddr,
    ready: tokio::sync::Mutex<mpsc::Receiver<Connection>>,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

/// What the listener and its background task both see.
#[derive(Debug)]
struct Shared {
    /// The handshake timeout in microseconds (an atomic, so that it can be changed after the
    /// background task started).
    handshake_timeout_us: AtomicU64,
    rejected: AtomicU64,
    last_rejections: Mutex<VecDeque<String>>,
}

impl Shared {
    fn handshake_timeout(&self) -> Duration {
        Duration::from_micros(self.handshake_timeout_us.load(Ordering::Relaxed))
    }

    fn reject(&self, error: &NetError) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        // A poisoned lock only means another thread panicked while pushing a string; the
        // queue is still a valid queue.
        let mut last = self
            .last_rejections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.len() == KEPT_REJECTIONS {
            last.pop_front();
        }
        last.push_back(with_causes(error));
    }
}

impl Listener {
    /// Binds `addr` (never a default of all interfaces: the caller gives the address) and
    /// starts accepting peers that prove they know `secret`.
    ///
    /// Must be called within a Tokio runtime, which runs the accepting task.
    ///
    /// # Errors
    ///
    /// [`NetError::Bind`] if the address cannot be bound.
    pub async fn bind(addr: SocketAddr, secret: Secret) -> Result<Listener, NetError> {
        let bind_error = |cause| NetError::Bind {
            addr: addr.to_string(),
            cause,
        };
        let tcp = TcpListener::bind(addr).await.map_err(bind_error)?;
        let local = tcp.local_addr().map_err(bind_error)?;
        let shared = Arc::new(Shared {
            handshake_timeout_us: AtomicU64::new(micros(DEFAULT_HANDSHAKE_TIMEOUT)),
            rejected: AtomicU64::new(0),
            last_rejections: Mutex::new(VecDeque::with_capacity(KEPT_REJECTIONS)),
        });
        let (sender, receiver) = mpsc::channel(READY_QUEUE);
        let task = tokio::spawn(accept_loop(tcp, local, secret, Arc::clone(&shared), sender));
        Ok(Listener {
            local,
            ready: tokio::sync::Mutex::new(receiver),
            shared,
            task,
        })
    }

    /// Sets how long a peer has to complete the handshake (10 s by default), for the
    /// connections accepted from now on.
    pub fn with_handshake_timeout(self, timeout: Duration) -> Listener {
        self.shared
            .handshake_timeout_us
            .store(micros(timeout), Ordering::Relaxed);
        self
    }

    /// The address it listens on (with the port the system chose if it was bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The next peer that completed the handshake.
    ///
    /// Cancel-safe: a peer is never lost by dropping an `accept` that has not completed.
    ///
    /// # Errors
    ///
    /// [`NetError::Closed`] if the accepting task has ended, which it does only if the runtime
    /// is shutting down. Failed handshakes are not errors here (see
    /// [`rejections`](Listener::rejections)).
    pub async fn accept(&self) -> Result<Connection, NetError> {
        self.ready
            .lock()
            .await
            .recv()
            .await
            .ok_or_else(|| NetError::Closed {
                addr: self.local.to_string(),
            })
    }

    /// How many peers failed the handshake (or could not be accepted) since the bind.
    pub fn rejected(&self) -> u64 {
        self.shared.rejected.load(Ordering::Relaxed)
    }

    /// The errors of the last few rejected peers (up to 16, oldest first), each naming the peer
    /// and followed by its causes.
    pub fn rejections(&self) -> Vec<String> {
        let last = self
            .shared
            .last_rejections
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        last.iter().cloned().collect()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Ending the task drops the socket and the set of handshakes, which aborts them.
        self.task.abort();
    }
}

/// Accepts connections and runs each handshake in its own task, handing good peers to
/// `ready`, until the listener is dropped.
async fn accept_loop(
    tcp: TcpListener,
    local: SocketAddr,
    secret: Secret,
    shared: Arc<Shared>,
    ready: mpsc::Sender<Connection>,
) {
    let mut handshakes = JoinSet::new();
    // The handshakes in the order their peers came, finished ones dropped from the front as
    // they are met: the one to give up when the set is full.
    let mut arrivals: VecDeque<Arrival> = VecDeque::new();
    loop {
        // Collect finished handshakes so the set holds only those under way.
        while handshakes.try_join_next().is_some() {}
        let (stream, peer) = match tcp.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                let about_one_peer = matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
                );
                shared.reject(&NetError::io(format!("a new peer of {local}"), e));
                if !about_one_peer {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                continue;
            }
        };
        while handshakes.try_join_next().is_some() {}
        if handshakes.len() >= MAX_PENDING_HANDSHAKES {
            give_up_oldest(&mut arrivals, &shared);
            // The task given up ends when next polled (or, if every task holds a peer that
            // passed and waits for `accept`, one of those is taken): collected before the
            // set is counted again.
            handshakes.join_next().await;
        }
        if arrivals.len() > 2 * MAX_PENDING_HANDSHAKES {
            arrivals.retain(|arrival| !arrival.handle.is_finished());
        }
        let (secret, shared, ready) = (secret.clone(), Arc::clone(&shared), ready.clone());
        let state = Arc::new(AtomicU8::new(HANDSHAKING));
        let state_in_task = Arc::clone(&state);
        let handle = handshakes.spawn(async move {
            let limit = shared.handshake_timeout();
            let attempt = Connection::handshake(stream, peer, &secret, Role::Server);
            match tokio::time::timeout(limit, attempt).await {
                // A send fails only if the listener was dropped; the peer goes with it.
                // A peer given up for a newer one in the meantime is not handed on.
                Ok(Ok(connection)) => {
                    if claim(&state_in_task, PASSED) {
                        drop(ready.send(connection).await);
                    }
                }
                // Counted once: not if the loop gave the peer up meanwhile (and counted it).
                Ok(Err(error)) => {
                    if claim(&state_in_task, FAILED) {
                        shared.reject(&error);
                    }
                }
                Err(_) => {
                    if claim(&state_in_task, FAILED) {
                        shared.reject(&NetError::Timeout {
                            peer: peer.to_string(),
                            what: "handshake",
                        });
                    }
                }
            }
        });
        arrivals.push_back(Arrival {
            handle,
            peer,
            state,
        });
    }
}

/// A peer whose handshake task was started.
struct Arrival {
    handle: AbortHandle,
    peer: SocketAddr,
    /// [`HANDSHAKING`], then [`PASSED`] (never given up then), [`FAILED`] or [`GIVEN_UP`],
    /// whichever the task or the accepting loop claims first.
    state: Arc<AtomicU8>,
}

/// A peer's handshake is under way.
const HANDSHAKING: u8 = 0;
/// The peer passed the handshake and is handed to [`Listener::accept`].
const PASSED: u8 = 1;
/// The peer was given up for a newer one.
const GIVEN_UP: u8 = 2;
/// The peer failed the handshake or ran out of time.
const FAILED: u8 = 3;

/// Moves `state` from [`HANDSHAKING`] to `to`; whether this call did.
fn claim(state: &AtomicU8, to: u8) -> bool {
    state
        .compare_exchange(HANDSHAKING, to, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Gives up the handshake under way that began first, to make room for a new peer; a peer
/// that already passed (waiting for [`Listener::accept`]) keeps its place. (A task that ended
/// after the set was last collected may still be counted in it: another is then given up
/// although there was room, which costs that peer a retry and nothing else.)
fn give_up_oldest(arrivals: &mut VecDeque<Arrival>, shared: &Shared) {
    let mut kept = Vec::new();
    while let Some(arrival) = arrivals.pop_front() {
        if arrival.handle.is_finished() {
            continue;
        }
        if !claim(&arrival.state, GIVEN_UP) {
            // It passed, and keeps its place; or it failed, and is ending.
            if arrival.state.load(Ordering::Acquire) == PASSED {
                kept.push(arrival);
            }
            continue;
        }
        arrival.handle.abort();
        shared.reject(&NetError::Timeout {
            peer: arrival.peer.to_string(),
            what: "handshake (given up for a newer peer: too many under way)",
        });
        break;
    }
    for arrival in kept.into_iter().rev() {
        arrivals.push_front(arrival);
    }
}

/// `error` and its causes, one after another, as `anyhow` prints them with `{:#}`: the caller
/// gets the operating system's reason along with the peer.
fn with_causes(error: &NetError) -> String {
    let mut text = error.to_string();
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// `duration` in microseconds, saturating (a timeout of half a million years is no timeout).
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_keep_the_cause_and_the_last_few() {
        let shared = Shared {
            handshake_timeout_us: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            last_rejections: Mutex::new(VecDeque::new()),
        };
        for i in 0..20 {
            let cause = io::Error::new(io::ErrorKind::ConnectionReset, format!("reset {i}"));
            shared.reject(&NetError::io(
                SocketAddr::from(([10, 0, 0, 2], 7070)),
                cause,
            ));
        }
        assert_eq!(shared.rejected.load(Ordering::Relaxed), 20);
        let last = shared.last_rejections.lock().unwrap();
        assert_eq!(last.len(), KEPT_REJECTIONS);
        assert_eq!(last[0], "connection with 10.0.0.2:7070: reset 4");
        assert_eq!(last[15], "connection with 10.0.0.2:7070: reset 19");
    }

    /// The loop gives up the oldest handshake still under way, never a peer that passed nor
    /// one already ended, and counts it.
    #[tokio::test]
    async fn the_oldest_pending_handshake_is_given_up() {
        let shared = Shared {
            handshake_timeout_us: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            last_rejections: Mutex::new(VecDeque::new()),
        };
        let mut tasks = JoinSet::new();
        let mut arrivals = VecDeque::new();
        for (port, state) in [(1, FAILED), (2, PASSED), (3, HANDSHAKING), (4, HANDSHAKING)] {
            let handle = tasks.spawn(std::future::pending::<()>());
            arrivals.push_back(Arrival {
                handle,
                peer: SocketAddr::from(([127, 0, 0, 1], port)),
                state: Arc::new(AtomicU8::new(state)),
            });
        }
        give_up_oldest(&mut arrivals, &shared);
        let states: Vec<(u16, u8)> = arrivals
            .iter()
            .map(|a| (a.peer.port(), a.state.load(Ordering::Acquire)))
            .collect();
        // The ended one went, the passed one kept its place, port 3 was given up.
        assert_eq!(states, [(2, PASSED), (4, HANDSHAKING)]);
        assert_eq!(shared.rejected.load(Ordering::Relaxed), 1);
        let reason = shared.last_rejections.lock().unwrap()[0].clone();
        assert!(reason.contains("127.0.0.1:3"), "{reason}");
        // Its task was aborted; the others run on.
        let ended = tasks.join_next().await.unwrap();
        assert!(ended.unwrap_err().is_cancelled());
        assert_eq!(tasks.len(), 3);
    }

    /// A handshake's end and the loop's giving up race for one state: exactly one wins,
    /// whoever comes first, from many threads at once.
    #[test]
    fn one_claim_wins() {
        for _ in 0..200 {
            let state = Arc::new(AtomicU8::new(HANDSHAKING));
            let wins: Vec<bool> = std::thread::scope(|scope| {
                let claims: Vec<_> = [PASSED, GIVEN_UP, FAILED, GIVEN_UP]
                    .into_iter()
                    .map(|to| {
                        let state = Arc::clone(&state);
                        scope.spawn(move || claim(&state, to))
                    })
                    .collect();
                claims.into_iter().map(|c| c.join().unwrap()).collect()
            });
            assert_eq!(wins.iter().filter(|w| **w).count(), 1, "{wins:?}");
            assert_ne!(state.load(Ordering::Acquire), HANDSHAKING);
        }
    }

    #[test]
    fn micros_saturates() {
        assert_eq!(micros(Duration::from_millis(200)), 200_000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
