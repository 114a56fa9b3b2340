//! Turns for a worker's pushes: to one owner they go one at a time, in the order their tasks
//! finished; to different owners they go at once.
//!
//! Why: a worker that pushed each finished task's output at once, whatever else it was
//! pushing, had several pushes share its link, and they all ended together, late; the
//! coordinator holds back a worker's next tasks while it has as many outputs in delivery as
//! it has threads, so the link then went idle while those next tasks computed. One push at
//! a time per owner ends the oldest first, so the worker gets a thread back while the
//! younger outputs keep the links busy. Pushes to the different owners go side by side, so
//! every worker sends to all the others and receives from all of them, and no link waits on
//! another's queue (docs/BENCHMARKS.md, "Pushes that take turns").

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The queues of a worker's pushes, one per owner.
#[derive(Default)]
pub(crate) struct PushTurns {
    queues: Mutex<HashMap<usize, Queue>>,
    turn_ended: Condvar,
}

/// One owner's queue.
#[derive(Default)]
struct Queue {
    /// The number the next ticket gets.
    next: u64,
    /// The number whose turn it is.
    serving: u64,
    /// Tickets given up before their turn came: skipped when it does.
    given_up: BTreeSet<u64>,
}

impl Queue {
    /// Ends the current turn: the next ticket not given up is served.
    fn advance(&mut self) {
        self.serving += 1;
        while self.given_up.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

/// A place in one owner's queue ([`PushTurns::take`]); waited on with [`PushTurns::wait`].
/// Dropped unused, it gives its place up.
pub(crate) struct Ticket<'a> {
    turns: &'a PushTurns,
    owner: usize,
    number: u64,
    used: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if self.used {
            return;
        }
        let mut queues = self.turns.lock();
        if let Some(queue) = queues.get_mut(&self.owner) {
            if queue.serving == self.number {
                queue.advance();
            } else {
                queue.given_up.insert(self.number);
            }
        }
        drop(queues);
        self.turns.turn_ended.notify_all();
    }
}

/// A push's turn: the next in its owner's queue goes when this drops.
pub(crate) struct Turn<'a> {
    turns: &'a PushTurns,
    owner: usize,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(queue) = self.turns.lock().get_mut(&self.owner) {
            queue.advance();
        }
        self.turns.turn_ended.notify_all();
    }
}

impl PushTurns {
    fn lock(&self) -> MutexGuard<'_, HashMap<usize, Queue>> {
        // The queues are consistent after every step: a panic elsewhere leaves them usable.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Places in the queues of `owners` (one each), taken together: two tasks' pushes then
    /// come in the same order in every queue they share.
    pub(crate) fn take(&self, owners: impl IntoIterator<Item = usize>) -> Vec<Ticket<'_>> {
        let mut queues = self.lock();
        owners
            .into_iter()
            .map(|owner| {
                let queue = queues.entry(owner).or_default();
                let number = queue.next;
                queue.next += 1;
                Ticket {
                    turns: self,
                    owner,
                    number,
                    used: false,
                }
            })
            .collect()
    }

    /// Waits until `ticket`'s turn comes; the turn lasts until the returned value drops.
    pub(crate) fn wait<'a>(&'a self, mut ticket: Ticket<'a>) -> Turn<'a> {
        ticket.used = true;
        let owner = ticket.owner;
        let mut queues = self.lock();
        while queues.get(&owner).map(|q| q.serving) != Some(ticket.number) {
            queues = self
                .turn_ended
                .wait(queues)
                .unwrap_or_else(|e| e.into_inner());
        }
        Turn { turns: self, owner }
    }

    /// Makes `pushes` (owner, what to push), each in its owner's turn, on up to `at_once`
    /// threads (this one included): a thread takes the next push in the order given, waits
    /// for its turn and makes it with `push`. Returns when all are made.
    ///
    /// The places in the queues are taken together, so every queue orders two calls' pushes
    /// alike; the oldest call's pushes are then at the head of every queue they are in and
    /// never wait, whatever the number of threads, and no call waits forever on another.
    pub(crate) fn push_all<T: Sync>(
        &self,
        pushes: &[(usize, T)],
        at_once: usize,
        push: impl Fn(usize, &T) + Sync,
    ) {
        let tickets = self.take(pushes.iter().map(|(owner, _)| *owner));
        let queue = Mutex::new(pushes.iter().zip(tickets).collect::<VecDeque<_>>());
        let next = || queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
        let pusher = || {
            while let Some(((owner, what), ticket)) = next() {
                let _turn = self.wait(ticket);
                push(*owner, what);
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..pushes.len().clamp(1, at_once.max(1)) {
                scope.spawn(pusher);
            }
            pusher();
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn turns_of_different_owners_do_not_wait_for_each_other() {
        let turns = PushTurns::default();
        let mut tickets = turns.take([0, 1]);
        let second = tickets.pop().unwrap();
        let first = tickets.pop().unwrap();
        // Both turns at once from one thread: a wait on owner 1 behind owner 0 would hang.
        let a = turns.wait(first);
        let b = turns.wait(second);
        drop((a, b));
    }

    #[test]
    fn a_ticket_given_up_is_skipped() {
        let turns = PushTurns::default();
        let mut tickets: Vec<Ticket<'_>> = (0..4).flat_map(|_| turns.take([7])).collect();
        let last = tickets.pop().unwrap();
        let third = tickets.pop().unwrap();
        let second = tickets.pop().unwrap();
        let first = tickets.pop().unwrap();
        // The second is given up before the first's turn ends, the third while it is the
        // one being served: the fourth's turn still comes.
        drop(second);
        drop(turns.wait(first));
        drop(third);
        drop(turns.wait(last));
        let mut next = turns.take([7]);
        drop(turns.wait(next.pop().unwrap()));
    }

    #[test]
    fn many_threads_are_served_one_at_a_time_per_owner_in_ticket_order() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 200;
        const OWNERS: usize = 3;
        let turns = Arc::new(PushTurns::default());
        // Per owner: who holds its turn now (how many at once), and the ticket numbers in
        // the order they were served.
        let holding: Arc<Vec<AtomicUsize>> =
            Arc::new((0..OWNERS).map(|_| AtomicUsize::new(0)).collect());
        let served: Arc<Mutex<Vec<Vec<u64>>>> = Arc::new(Mutex::new(vec![Vec::new(); OWNERS]));
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (turns, holding, served) = (
                    Arc::clone(&turns),
                    Arc::clone(&holding),
                    Arc::clone(&served),
                );
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        // Each "task" pushes to the owners other than its thread's, one
                        // thread per owner, as a worker does.
                        let owners: Vec<usize> =
                            (0..OWNERS).filter(|o| o % OWNERS != t % OWNERS).collect();
                        let tickets = turns.take(owners);
                        std::thread::scope(|scope| {
                            for ticket in tickets {
                                let (turns, holding, served) = (&turns, &holding, &served);
                                scope.spawn(move || {
                                    let owner = ticket.owner;
                                    let number = ticket.number;
                                    // Some give their place up, as a push whose owner was
                                    // lost does before waiting.
                                    if (round + t) % 17 == 0 {
                                        drop(ticket);
                                        return;
                                    }
                                    let _turn = turns.wait(ticket);
                                    let before = holding[owner].fetch_add(1, Ordering::SeqCst);
                                    assert_eq!(before, 0, "two turns of owner {owner} at once");
                                    served.lock().unwrap()[owner].push(number);
                                    if round % 50 == 0 {
                                        std::thread::sleep(Duration::from_micros(200));
                                    }
                                    holding[owner].fetch_sub(1, Ordering::SeqCst);
                                });
                            }
                        });
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let served = served.lock().unwrap();
        for (owner, numbers) in served.iter().enumerate() {
            assert!(!numbers.is_empty(), "owner {owner} was never served");
            assert!(
                numbers.windows(2).all(|w| w[0] < w[1]),
                "owner {owner} was served out of ticket order"
            );
        }
    }

    #[test]
    fn a_call_makes_as_many_pushes_at_once_as_it_may() {
        const OWNERS: usize = 10;
        const AT_ONCE: usize = 3;
        let turns = PushTurns::default();
        let (started, inside, most) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        let pushes: Vec<(usize, ())> = (0..OWNERS).map(|owner| (owner, ())).collect();
        turns.push_all(&pushes, AT_ONCE, |_, _| {
            started.fetch_add(1, Ordering::SeqCst);
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            // Each push waits until AT_ONCE are being made (or the last ones are): it ends
            // only if the other threads make theirs meanwhile.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while inside.load(Ordering::SeqCst) < AT_ONCE && started.load(Ordering::SeqCst) < OWNERS
            {
                assert!(
                    std::time::Instant::now() < deadline,
                    "fewer than {AT_ONCE} pushes at once"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            inside.fetch_sub(1, Ordering::SeqCst);
        });
        assert_eq!(started.into_inner(), OWNERS);
        assert_eq!(most.into_inner(), AT_ONCE);
    }

    #[test]
    fn pushes_to_many_owners_go_a_few_at_a_time_one_per_owner_in_task_order() {
        const TASKS: usize = 6;
        const ROUNDS: usize = 60;
        const OWNERS: usize = 12;
        const AT_ONCE: usize = 3;
        let turns = PushTurns::default();
        // Per owner: turns held now; per task: pushes being made now, and the most at once.
        let holding: Vec<AtomicUsize> = (0..OWNERS).map(|_| AtomicUsize::new(0)).collect();
        let making: Vec<AtomicUsize> = (0..TASKS).map(|_| AtomicUsize::new(0)).collect();
        let most: Vec<AtomicUsize> = (0..TASKS).map(|_| AtomicUsize::new(0)).collect();
        // Per owner, per task: the rounds served, in the order served.
        let served: Mutex<Vec<Vec<Vec<usize>>>> = Mutex::new(vec![vec![Vec::new(); TASKS]; OWNERS]);
        std::thread::scope(|scope| {
            for task in 0..TASKS {
                let (turns, holding, making, most, served) =
                    (&turns, &holding, &making, &most, &served);
                scope.spawn(move || {
                    for round in 0..ROUNDS {
                        // Every owner but one, in a different order for each task (as each
                        // worker starts after itself).
                        let pushes: Vec<(usize, usize)> =
                            (1..OWNERS).map(|i| ((task + i) % OWNERS, round)).collect();
                        turns.push_all(&pushes, AT_ONCE, |owner, &round| {
                            let now = making[task].fetch_add(1, Ordering::SeqCst) + 1;
                            most[task].fetch_max(now, Ordering::SeqCst);
                            let before = holding[owner].fetch_add(1, Ordering::SeqCst);
                            assert_eq!(before, 0, "two turns of owner {owner} at once");
                            served.lock().unwrap()[owner][task].push(round);
                            if (round + owner) % 7 == 0 {
                                std::thread::sleep(Duration::from_micros(100));
                            }
                            holding[owner].fetch_sub(1, Ordering::SeqCst);
                            making[task].fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        for (task, most) in most.iter().enumerate() {
            let most = most.load(Ordering::SeqCst);
            assert!(
                most <= AT_ONCE,
                "task {task} made up to {most} pushes at once (at most {AT_ONCE} wanted)"
            );
        }
        let served = served.into_inner().unwrap();
        for (owner, tasks) in served.iter().enumerate() {
            for (task, rounds) in tasks.iter().enumerate() {
                let expected: Vec<usize> = if task == owner {
                    Vec::new()
                } else {
                    (0..ROUNDS).collect()
                };
                assert_eq!(rounds, &expected, "owner {owner}, task {task}");
            }
        }
    }
}
