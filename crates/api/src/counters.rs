//! Hadoop-style job counters and the live status the command line shows.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde::Serialize;

macro_rules! counters {
    ($( $(#[$doc:meta])* $variant:ident => $name:ident ),* $(,)?) => {
        /// One of the built-in counters.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Counter {
            $( $(#[$doc])* $variant, )*
        }

        /// Live counters of a running job, updated by all tasks. Tasks add to them with
        /// [`Counters::add`]; anyone reads them with [`Counters::get`] or
        /// [`Counters::snapshot`].
        #[derive(Debug, Default)]
        pub struct Counters {
            $( $name: AtomicU64, )*
        }

        /// A snapshot of [`Counters`], ready to print or serialise, or the counts of one task
        /// that a driver adds to the job's with [`Counters::add_values`].
        #[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq, Eq)]
        pub struct CounterValues {
            $( $(#[$doc])* pub $name: u64, )*
        }

        impl Counters {
            fn cell(&self, counter: Counter) -> &AtomicU64 {
                match counter {
                    $( Counter::$variant => &self.$name, )*
                }
            }

            /// Reads every counter.
            pub fn snapshot(&self) -> CounterValues {
                CounterValues { $( $name: self.$name.load(Ordering::Relaxed), )* }
            }

            /// Sets every counter to its value in `values`: for a driver whose tasks count
            /// elsewhere (cluster workers) and report their totals.
            pub fn store_values(&self, values: &CounterValues) {
                $( self.$name.store(values.$name, Ordering::Relaxed); )*
            }

            /// Adds every counter of `values` (a task's counts) to these.
            pub fn add_values(&self, values: &CounterValues) {
                $( if values.$name != 0 {
                    self.$name.fetch_add(values.$name, Ordering::Relaxed);
                } )*
            }

            /// Takes back every counter of `values`, added by a task attempt that then
            /// failed.
            pub fn sub_values(&self, values: &CounterValues) {
                $( if values.$name != 0 {
                    self.$name.fetch_sub(values.$name, Ordering::Relaxed);
                } )*
            }
        }

        impl CounterValues {
            /// `(name, value)` pairs in declaration order, for printing.
            pub fn entries(&self) -> Vec<(&'static str, u64)> {
                vec![ $( (stringify!($name), self.$name), )* ]
            }

            /// Adds every counter of `other` to these.
            pub fn add(&mut self, other: &CounterValues) {
                $( self.$name = self.$name.wrapping_add(other.$name); )*
            }
        }
    };
}

counters! {
    /// Splits read by map tasks.
    MapTasks => map_tasks,
    /// Lines read by map tasks.
    MapInputRecords => map_input_records,
    /// Bytes of input consumed (uncompressed, terminators included).
    MapInputBytes => map_input_bytes,
    /// Pairs emitted by mappers.
    MapOutputRecords => map_output_records,
    /// Key and value bytes emitted by mappers.
    MapOutputBytes => map_output_bytes,
    /// Pairs given to the combiner (or the hash aggregation), counting again those it sums
    /// when runs are merged (as Hadoop counts its combiner's runs over merged spills).
    CombineInputRecords => combine_input_records,
    /// Pairs the combiner produced, in flushes and in merges.
    CombineOutputRecords => combine_output_records,
    /// Records written to spill files on disk.
    SpilledRecords => spilled_records,
    /// Spill files written.
    SpilledRuns => spilled_runs,
    /// Bytes written to spill files.
    SpilledBytes => spilled_bytes,
    /// Runs kept in memory instead of on disk.
    MemoryRuns => memory_runs,
    /// Intermediate merge passes that had to go through disk because of the budget.
    MergePasses => merge_passes,
    /// Key ranges merged and reduced apart, each on a thread of its own, in the reduce tasks
    /// whose large partitions were split (see `Stage::with_independent_keys`); 0 when none was.
    ReduceRanges => reduce_ranges,
    /// Distinct keys seen by reducers (all stages).
    ReduceInputGroups => reduce_input_groups,
    /// Records read by reducers (all stages).
    ReduceInputRecords => reduce_input_records,
    /// Records written to the output.
    OutputRecords => output_records,
    /// Bytes written to the output.
    OutputBytes => output_bytes,
}

impl Counters {
    /// Adds `n` to `counter`.
    #[inline]
    pub fn add(&self, counter: Counter, n: u64) {
        self.cell(counter).fetch_add(n, Ordering::Relaxed);
    }

    /// The current value of `counter`.
    pub fn get(&self, counter: Counter) -> u64 {
        self.cell(counter).load(Ordering::Relaxed)
    }
}

/// The phase a job is in, for progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[repr(u8)]
pub enum Phase {
    /// Finding inputs and planning splits.
    Planning = 0,
    /// Map tasks are running.
    Map = 1,
    /// Merging and reducing.
    Reduce = 2,
    /// Writing `_SUCCESS`.
    Commit = 3,
    /// Finished.
    Done = 4,
}

/// Where a [`Note`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteSource {
    /// The cluster the job runs on: its workers and containers.
    Cluster,
    /// One of the job's tasks.
    Task,
}

/// Something the user should be told while the job runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// What it is about.
    pub source: NoteSource,
    /// What to say (one line, or a few).
    pub text: String,
}

/// What a progress display needs: counters plus the phase and its amount of work.
#[derive(Debug, Default)]
pub struct JobStatus {
    /// The counters.
    pub counters: Counters,
    phase: AtomicU8,
    /// Bytes of input in total (known after planning).
    input_bytes_total: AtomicU64,
    /// Tasks of the current phase.
    tasks_total: AtomicU64,
    /// Tasks of the current phase finished.
    tasks_done: AtomicU64,
    cancelled: AtomicBool,
    /// Counters defined by the job's code (e.g. `reporter:counter:` lines of streaming
    /// programs): group, then name. Only those of successful task attempts.
    user_counters: Mutex<UserCounters>,
    /// What task attempts still running counted ([`JobStatus::count`],
    /// [`JobStatus::add_user_counters`]): their user counters are added to `user_counters`
    /// when the attempt succeeds, and all of it is taken back when it fails.
    pending_counters: Mutex<std::collections::HashMap<crate::TaskContext, AttemptCounters>>,
    /// Task attempts that failed, taken by the front end (which may report them as Hadoop's
    /// job client does).
    failures: Mutex<Vec<AttemptFailure>>,
    /// The last status line a task reported (`reporter:status:`).
    task_status: Mutex<String>,
    /// What the front end should tell the user as it happens (e.g. why YARN stopped a
    /// worker's container), in order.
    notes: Mutex<Vec<Note>>,
    /// What the job waits for before its tasks can run (YARN's containers, say), as the
    /// progress display shows it while planning; empty when it waits for nothing.
    waiting_for: Mutex<String>,
}

/// A task attempt that failed.
#[derive(Debug, Clone)]
pub struct AttemptFailure {
    /// Which task and attempt.
    pub attempt: crate::TaskContext,
    /// The task as messages name it (`map task 3 (corpus/a.txt, bytes 0..33554432)`).
    pub task: String,
    /// Why, with the whole chain of causes.
    pub error: String,
    /// How many attempts the task may have in all.
    pub attempts: usize,
    /// Whether the task is tried again.
    pub retried: bool,
}

/// Counters defined by a job's own code: group name, then counter name, then value.
pub type UserCounters = BTreeMap<String, BTreeMap<String, i64>>;

/// What one task attempt counted: the job's total is the sum of its successful attempts'.
/// A cluster worker reports them with each finished task, so that the job keeps the counts
/// of a lost worker's tasks that are not run again, and only those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptCounters {
    /// The built-in counters the attempt's task counted itself (not what merges of
    /// several tasks' output counted between tasks).
    pub counters: CounterValues,
    /// The counters its code defined.
    pub user_counters: UserCounters,
}

impl AttemptCounters {
    /// Adds everything `other` counted to these.
    pub fn add(&mut self, other: &AttemptCounters) {
        self.counters.add(&other.counters);
        merge_counters(&mut self.user_counters, &other.user_counters);
    }
}

/// Adds every counter of `from` to `into`.
fn merge_counters(into: &mut UserCounters, from: &UserCounters) {
    for (group, names) in from {
        let target = into.entry(group.clone()).or_default();
        for (name, value) in names {
            let slot = target.entry(name.clone()).or_default();
            *slot = slot.wrapping_add(*value);
        }
    }
}

/// Replaces the text in `slot` with `text`, keeping its buffer.
fn replace_text(slot: &Mutex<String>, text: &str) {
    let mut slot = lock(slot);
    slot.clear();
    slot.push_str(text);
}

/// Locks `m`, ignoring poisoning: every value kept here stays consistent between statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl JobStatus {
    /// Bytes of input in total, once planned.
    pub fn input_bytes_total(&self) -> u64 {
        self.input_bytes_total.load(Ordering::Relaxed)
    }

    /// Sets the bytes of input in total, for the progress display.
    pub fn set_input_bytes_total(&self, bytes: u64) {
        self.input_bytes_total.store(bytes, Ordering::Relaxed);
    }

    /// Tasks of the current phase: `(finished, in all)`.
    pub fn tasks(&self) -> (u64, u64) {
        (
            self.tasks_done.load(Ordering::Relaxed),
            self.tasks_total.load(Ordering::Relaxed),
        )
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::Planning,
            1 => Phase::Map,
            2 => Phase::Reduce,
            3 => Phase::Commit,
            _ => Phase::Done,
        }
    }

    /// The job enters `phase`, which has `tasks` tasks (for the progress display).
    pub fn enter(&self, phase: Phase, tasks: u64) {
        self.tasks_total.store(tasks, Ordering::Relaxed);
        self.tasks_done.store(0, Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// Asks every task to stop as soon as it can (e.g. on Ctrl-C); the job then fails with
    /// [`crate::ExecError::Cancelled`] and leaves no output.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether the job was cancelled or a task failed.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// One more task of the current phase is done.
    pub fn task_done(&self) {
        self.tasks_done.fetch_add(1, Ordering::Relaxed);
    }

    /// A task of the current phase counted done must run again (its output went with a
    /// lost worker): the display counts it once it is done again.
    pub fn task_undone(&self) {
        let _ = self
            .tasks_done
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Adds `values`, counted by task attempt `attempt`, to the job's live counters and to
    /// the attempt's own, which [`JobStatus::commit_attempt`] returns.
    pub fn count(&self, attempt: &crate::TaskContext, values: &CounterValues) {
        self.counters.add_values(values);
        lock(&self.pending_counters)
            .entry(*attempt)
            .or_default()
            .counters
            .add(values);
    }

    /// Adds counters reported by the code of task attempt `attempt`. They count for the job
    /// once the attempt succeeds; a failed attempt's counters are dropped, as in Hadoop.
    pub fn add_user_counters(&self, attempt: &crate::TaskContext, counters: &UserCounters) {
        let mut pending = lock(&self.pending_counters);
        merge_counters(
            &mut pending.entry(*attempt).or_default().user_counters,
            counters,
        );
    }

    /// The attempt succeeded: its user counters count. Returns what it counted.
    pub fn commit_attempt(&self, attempt: &crate::TaskContext) -> AttemptCounters {
        let done = lock(&self.pending_counters)
            .remove(attempt)
            .unwrap_or_default();
        merge_counters(&mut lock(&self.user_counters), &done.user_counters);
        done
    }

    /// The attempt failed: what it counted leaves the live counters (the input bytes a map
    /// task showed as progress, say), and its user counters are dropped, as in Hadoop, where
    /// only successful attempts count.
    pub fn discard_attempt(&self, attempt: &crate::TaskContext) {
        let failed = lock(&self.pending_counters).remove(attempt);
        if let Some(failed) = failed {
            self.counters.sub_values(&failed.counters);
        }
    }

    /// The job's own counters so far.
    pub fn user_counters(&self) -> UserCounters {
        lock(&self.user_counters).clone()
    }

    /// Records a failed task attempt.
    pub fn attempt_failed(&self, failure: AttemptFailure) {
        lock(&self.failures).push(failure);
    }

    /// Takes the failed attempts recorded since the last call.
    pub fn take_failures(&self) -> Vec<AttemptFailure> {
        std::mem::take(&mut *lock(&self.failures))
    }

    /// Records something about the cluster the job runs on (a worker lost or left out, a
    /// container stopped) that the user should be told while the job runs (one line, or a
    /// few).
    pub fn note(&self, text: impl Into<String>) {
        lock(&self.notes).push(Note {
            source: NoteSource::Cluster,
            text: text.into(),
        });
    }

    /// Records something odd about one of the job's tasks, which the user should be told
    /// while the job runs (why it waits, say).
    pub fn task_note(&self, text: impl Into<String>) {
        lock(&self.notes).push(Note {
            source: NoteSource::Task,
            text: text.into(),
        });
    }

    /// Takes the notes recorded since the last call, oldest first.
    pub fn take_notes(&self) -> Vec<Note> {
        std::mem::take(&mut *lock(&self.notes))
    }

    /// Records the latest status line a task reported.
    pub fn set_task_status(&self, status: &str) {
        replace_text(&self.task_status, status);
    }

    /// The latest status line a task reported (empty if none).
    pub fn task_status(&self) -> String {
        lock(&self.task_status).clone()
    }

    /// Says what the job now waits for before its tasks can run (empty: nothing).
    pub fn set_waiting_for(&self, what: &str) {
        replace_text(&self.waiting_for, what);
    }

    /// What the job waits for before its tasks can run (empty if nothing).
    pub fn waiting_for(&self) -> String {
        lock(&self.waiting_for).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TaskContext;

    fn attempt(task: usize, attempt: usize) -> TaskContext {
        TaskContext {
            is_map: true,
            task,
            attempt,
            stage: 1,
        }
    }

    #[test]
    fn an_attempt_gets_back_what_it_counted_and_the_job_counts_it_at_once() {
        let status = JobStatus::default();
        let (first, second) = (attempt(0, 0), attempt(1, 0));
        let read = |n| CounterValues {
            map_input_records: n,
            ..CounterValues::default()
        };
        status.count(&first, &read(3));
        status.count(&second, &read(10));
        status.count(&first, &read(4));
        let user: UserCounters = [("g".to_string(), [("c".to_string(), 2)].into())].into();
        status.add_user_counters(&first, &user);
        // The live counters show everything at once; user counters only once committed.
        assert_eq!(status.counters.get(Counter::MapInputRecords), 17);
        assert!(status.user_counters().is_empty());

        let counted = status.commit_attempt(&first);
        assert_eq!(counted.counters.map_input_records, 7);
        assert_eq!(counted.user_counters, user);
        assert_eq!(status.user_counters(), user);
        // Taken once: a second commit finds nothing.
        assert_eq!(status.commit_attempt(&first), AttemptCounters::default());

        status.add_user_counters(&second, &user);
        status.discard_attempt(&second);
        assert_eq!(
            status.counters.get(Counter::MapInputRecords),
            7,
            "a failed attempt's counts leave the live counters"
        );
        assert_eq!(status.commit_attempt(&second), AttemptCounters::default());
        assert_eq!(
            status.user_counters(),
            user,
            "a failed attempt's are dropped"
        );
    }

    #[test]
    fn attempt_counters_add_up_field_by_field_and_counter_by_counter() {
        let user =
            |n| -> UserCounters { [("g".to_string(), [("c".to_string(), n)].into())].into() };
        let mut total = AttemptCounters::default();
        for n in [1, 2, 3] {
            total.add(&AttemptCounters {
                counters: CounterValues {
                    output_records: n as u64,
                    spilled_bytes: 10,
                    ..CounterValues::default()
                },
                user_counters: user(n),
            });
        }
        assert_eq!(total.counters.output_records, 6);
        assert_eq!(total.counters.spilled_bytes, 30);
        assert_eq!(total.user_counters, user(6));
    }

    #[test]
    fn a_task_done_again_counts_once_and_the_count_never_goes_below_zero() {
        let status = JobStatus::default();
        status.enter(Phase::Map, 3);
        status.task_done();
        status.task_done();
        status.task_undone();
        assert_eq!(status.tasks(), (1, 3));
        status.task_undone();
        status.task_undone();
        assert_eq!(status.tasks(), (0, 3));
        status.task_done();
        assert_eq!(status.tasks(), (1, 3));
    }
}
