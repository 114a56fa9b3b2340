//! The ring's wake-up protocol under the loom model checker (`tests/shm/loom.sh`).
//!
//! Each test runs a producer and a consumer of one tiny ring in two loom threads; loom runs it
//! once for every interleaving of their atomic operations (up to the preemption bound below)
//! and for every value each load may legally return under the C++ memory model. The futex is
//! modelled without timeouts (`sync::model`), so a lost wake-up leaves a side asleep for ever
//! and loom fails the test with a deadlock; each data byte is a loom cell, so a byte read
//! before its write is ordered before the read fails the test as a data race. The expected
//! bytes are computed independently of the ring (`pattern`), and compared at the end.

use loom::thread;

use super::*;

/// A healthy owner: nothing else to flush before sleeping, and no peer to check on.
struct Model;

impl Sleeper for Model {
    fn before_sleep(&mut self) {}
    fn after_wake(&mut self, timed_out: bool) -> Result<(), ShmError> {
        // The model's waits have no timeout: only a wake-up ends them.
        assert!(!timed_out, "a modelled wait timed out");
        Ok(())
    }
}

/// How many times loom may switch threads where the running one could have gone on, unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise (`tests/shm/loom.sh` sets 3). Two already catches
/// every break of `tests/shm/loom-mutants.sh`, in under a second for all the tests.
const PREEMPTIONS: usize = 2;

/// Runs `test` under loom with the preemption bound.
fn check(test: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(PREEMPTIONS);
    }
    builder.check(test);
}

/// The producer and the consumer of a fresh ring of `capacity` bytes, both checking the
/// other's counters as the engine does.
fn pair(capacity: u64) -> (Producer, Consumer) {
    let ring = Ring::new(capacity);
    (Producer::new(ring.share(), true), Consumer::new(ring, true))
}

/// Bytes that tell their own position, so that a misplaced or repeated byte shows.
fn pattern(len: usize) -> Vec<u8> {
    (1..=len).map(|i| i as u8).collect()
}

/// Reads until the end of the stream, `chunk` bytes at most at a time.
fn read_to_end(consumer: &mut Consumer, chunk: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0; chunk];
    loop {
        let n = consumer.read(&mut buf, &mut Model).expect("read");
        if n == 0 {
            return got;
        }
        got.extend_from_slice(&buf[..n]);
    }
}

/// More bytes than the ring holds, in writes and reads of sizes that do not divide the
/// capacity: the producer sleeps on a full ring and the consumer on an empty one, and whatever
/// the interleaving, both are woken, every byte arrives exactly once and in order, and the
/// consumer sees the end of the stream.
#[test]
fn every_byte_arrives_once_and_in_order_through_a_full_ring() {
    check(|| {
        let (mut producer, mut consumer) = pair(8);
        let data = pattern(11);
        let expected = data.clone();
        let writer = thread::spawn(move || {
            producer.write_all(&data[..5], &mut Model).expect("write");
            producer.write_all(&data[5..], &mut Model).expect("write");
            producer.close();
        });
        assert_eq!(read_to_end(&mut consumer, 3), expected);
        writer.join().expect("producer");
    });
}

/// A write smaller than the batch wakes nobody by itself; the producer's `flush` must wake a
/// consumer that went to sleep on the empty ring, whenever it did.
#[test]
fn a_flush_wakes_a_consumer_sleeping_on_an_empty_ring() {
    check(|| {
        let (mut producer, mut consumer) = pair(8);
        let writer = thread::spawn(move || {
            producer.write_all(&[42], &mut Model).expect("write");
            producer.flush();
        });
        let mut buf = [0; 4];
        assert_eq!(consumer.read(&mut buf, &mut Model).expect("read"), 1);
        assert_eq!(buf[0], 42);
        writer.join().expect("producer");
    });
}

/// A close with nothing written ends the stream for a consumer that sleeps on the empty ring
/// or has not yet looked; bytes written before the close are still delivered first.
#[test]
fn a_close_is_observed_by_a_sleeping_consumer() {
    check(|| {
        let (mut producer, mut consumer) = pair(8);
        let writer = thread::spawn(move || producer.close());
        assert_eq!(read_to_end(&mut consumer, 4), b"");
        writer.join().expect("producer");
    });
    check(|| {
        let (mut producer, mut consumer) = pair(8);
        let writer = thread::spawn(move || {
            producer.write_all(&[7], &mut Model).expect("write");
            producer.close();
        });
        assert_eq!(read_to_end(&mut consumer, 4), [7]);
        writer.join().expect("producer");
    });
}

/// A read smaller than the batch wakes nobody by itself; the consumer's `flush` must wake a
/// producer that went to sleep on the full ring, whenever it did.
#[test]
fn a_flush_wakes_a_producer_sleeping_on_a_full_ring() {
    check(|| {
        let (mut producer, mut consumer) = pair(8);
        let data = pattern(9);
        // The ring is full before the consumer starts.
        producer.write_all(&data[..8], &mut Model).expect("fill");
        let writer = thread::spawn(move || {
            producer.write_all(&data[8..], &mut Model).expect("write");
            producer.written()
        });
        let mut buf = [0; 1];
        assert_eq!(consumer.try_read(&mut buf).expect("read"), 1);
        assert_eq!(buf, [1]);
        consumer.flush();
        assert_eq!(writer.join().expect("producer"), 9);
    });
}

/// The owner of one ring's producer, sleeping on another ring: it first flushes what it wrote
/// (the flush-before-sleep rule, as the engine's and the client's sleepers do).
struct FlushFirst<'a>(&'a mut Producer);

impl Sleeper for FlushFirst<'_> {
    fn before_sleep(&mut self) {
        self.0.flush();
    }
    fn after_wake(&mut self, timed_out: bool) -> Result<(), ShmError> {
        Model.after_wake(timed_out)
    }
}

/// A request and its reply, each smaller than the batch, over two rings: neither write wakes
/// the peer by itself, so each side must flush its own ring before it sleeps on the other one,
/// or both sleep for ever.
#[test]
fn each_side_flushes_its_writes_before_sleeping_on_the_other_ring() {
    check(|| {
        let (mut requests, mut requests_in) = pair(8);
        let (mut replies_out, mut replies) = pair(8);
        let server = thread::spawn(move || {
            let mut buf = [0; 2];
            let n = requests_in
                .read(&mut buf, &mut FlushFirst(&mut replies_out))
                .expect("request");
            assert_eq!(&buf[..n], [1]);
            replies_out.write_all(&[2], &mut Model).expect("reply");
            // Sleeps until the client closes its requests, flushing the reply first.
            let n = requests_in
                .read(&mut buf, &mut FlushFirst(&mut replies_out))
                .expect("end");
            assert_eq!(n, 0);
        });
        requests.write_all(&[1], &mut Model).expect("request");
        let mut buf = [0; 2];
        let n = replies
            .read(&mut buf, &mut FlushFirst(&mut requests))
            .expect("reply");
        assert_eq!(&buf[..n], [2]);
        requests.close();
        server.join().expect("server");
    });
}
