/*
 * sluice_shm: the C client of the sluice shared-memory streaming protocol, version 1.
 * docs/shm-protocol.md is the contract; the section names below refer to it.
 *
 * The child reads the input ring (it is its consumer) and writes the output ring (it is its
 * producer). For each ring the library keeps a private copy of the counter it owns (`mine`),
 * the last value it accepted of the peer's counter (`theirs`), and the value `mine` had when it
 * last checked whether the peer sleeps (`announced`). Counters are unsigned 64-bit byte counts;
 * all arithmetic on them is modulo 2^64, so `a - b` is the distance from b to a.
 */
#define _GNU_SOURCE

#include "sluice_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * The shared words are accessed through C11 atomics. A lock-based atomic would use a lock
 * private to this process, which the engine cannot see, so only lock-free ones will do.
 */
#if ATOMIC_LLONG_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2
#error "the protocol needs lock-free 32- and 64-bit atomics"
#endif
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the protocol's integers are little-endian and are read here as native words"
#endif

typedef _Atomic unsigned long long shared_u64;
typedef _Atomic unsigned int shared_u32;
_Static_assert(sizeof(shared_u64) == 8 && sizeof(shared_u32) == 4,
               "the shared words are 64 and 32 bits");

/* Header ("Memory layout", "Header"): byte offsets from the start of the region. */
enum {
    HEADER_LEN = 4096,
    H_MAGIC = 0,
    H_VERSION = 8,
    H_HEADER_LEN = 12,
    H_REGION_LEN = 16,
    H_RINGS = 24,
    H_ENGINE_PID = 28,
    H_INPUT = 32,
    H_OUTPUT = 48,
    H_CHILD_STATE = 64,
    H_ENGINE_STATE = 68,
};
enum { VERSION = 1 };
enum { RING_INPUT = 1, RING_OUTPUT = 2 };
enum { CHILD_NOT_ATTACHED = 0, CHILD_ATTACHED = 1, CHILD_DETACHED = 2 };
enum { ENGINE_ABORTED = 1 };

/* Ring control block ("Ring"): byte offsets from the start of the ring. */
enum {
    R_TAIL = 0,
    R_CLOSED = 8,
    R_HEAD = 128,
    R_DATA_SEQ = 256,
    R_CONSUMER_SLEEPING = 260,
    R_SPACE_SEQ = 264,
    R_PRODUCER_SLEEPING = 268,
    R_DATA = 384,
};
enum { MIN_CAPACITY = 4096 };

/* Longest futex wait; after it, the engine's liveness is checked ("A dead or hostile peer"). */
#define WAIT_NS (200 * 1000 * 1000L)
/* Size of the stdout buffer, and the first size of the input buffer (it grows for long lines). */
#define STDIO_BUF (64 * 1024)

struct ring {
    shared_u64 *tail;             /* written by the producer */
    shared_u32 *closed;           /* written by the producer */
    shared_u64 *head;             /* written by the consumer */
    shared_u32 *data_seq;         /* bumped by the producer */
    shared_u32 *consumer_sleeping;
    shared_u32 *space_seq;        /* bumped by the consumer */
    shared_u32 *producer_sleeping;
    unsigned char *data;
    uint64_t capacity;
    uint64_t batch;     /* wake the peer after this many bytes (capacity / 4) */
    uint64_t mine;      /* our counter (head of the input ring, tail of the output ring) */
    uint64_t theirs;    /* the peer's counter as last loaded and accepted */
    uint64_t announced; /* `mine` when we last checked whether the peer sleeps */
};

struct sluice_shm {
    unsigned char *region; /* NULL if no region is attached */
    size_t region_len;
    pid_t engine_pid;
    shared_u32 *child_state;
    shared_u32 *engine_state;
    int has_in, has_out;   /* which rings are in use */
    struct ring in, out;
    int broken;            /* a ring broke the protocol: it must not be touched again */
    int out_failed;        /* some output was lost: do not report a normal end */

    /* Bytes read from the input but not yet returned: ibuf[ipos, iend). */
    char *ibuf;
    size_t icap, ipos, iend;
    int ieof;

    /* Bytes written for stdout but not yet written to it (only without an output ring). */
    char *obuf;
    size_t olen;

    char err[256];
};

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                     */

static int fail(sluice_shm *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(sluice_shm *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* The two ends the protocol prescribes instead of an error return (see the header). */
static _Noreturn void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void die(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice_shm: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

/* ---------------------------------------------------------------------------------------- */
/* Futexes                                                                                    */

/*
 * Bumps a wake-up counter and wakes whoever sleeps on it. The futexes are shared between
 * processes, hence FUTEX_WAKE and not FUTEX_WAKE_PRIVATE.
 */
static int wake(sluice_shm *s, shared_u32 *seq)
{
    atomic_fetch_add_explicit(seq, 1, memory_order_seq_cst);
    if (syscall(SYS_futex, (void *)seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0)
        return fail(s, "futex wake: %s", strerror(errno));
    return 0;
}

/*
 * Sleeps while *word still holds `seen`, for at most WAIT_NS. Returns 1 if the wait timed out,
 * 0 if it ended otherwise (woken, interrupted, or the value had already changed: each sends the
 * caller back to re-check the ring), -1 on error.
 */
static int futex_wait(sluice_shm *s, shared_u32 *word, unsigned seen)
{
    struct timespec timeout = {0, WAIT_NS};
    if (syscall(SYS_futex, (void *)word, FUTEX_WAIT, seen, &timeout, NULL, 0) == 0)
        return 0;
    switch (errno) {
    case ETIMEDOUT:
        return 1;
    case EAGAIN:
    case EINTR:
        return 0;
    default:
        return fail(s, "futex wait: %s", strerror(errno));
    }
}

/* After every wait: stop if the engine gave up on the task or, after a timeout, is gone. */
static void check_engine(const sluice_shm *s, int timed_out)
{
    if (atomic_load_explicit(s->engine_state, memory_order_acquire) == ENGINE_ABORTED)
        die(1, "the engine aborted the task");
    /*
     * kill(pid, 0) only checks that the process exists. EPERM means it does (under another
     * user). getppid() is no test: a shell script may stand between the engine and us.
     */
    if (timed_out && kill(s->engine_pid, 0) != 0 && errno == ESRCH)
        die(1, "the engine (pid %ld) has exited", (long)s->engine_pid);
}

/* ---------------------------------------------------------------------------------------- */
/* Waking the peer ("Sleeping and waking")                                                    */

/*
 * The producer's wake rule for the output ring, called after publishing `tail`. The consumer is
 * woken if it sleeps and either `batch` bytes were published since the last check or `force`
 * (flush, close, flush-before-sleep).
 *
 * `announced` moves on at every check, not only at actual wake-ups: a consumer that was seen
 * awake will re-check `tail` after setting `consumer_sleeping`, so the bytes published before
 * the check need no wake-up of their own. This keeps the fence to once per batch when the
 * consumer is busy.
 */
static int announce_data(sluice_shm *s, int force)
{
    struct ring *r = &s->out;
    uint64_t unannounced = r->mine - r->announced;
    if (unannounced == 0 || (!force && unannounced < r->batch))
        return 0;
    r->announced = r->mine;
    /*
     * Dekker's handshake with the consumer's "store consumer_sleeping = 1; load tail": the
     * fence orders our (release) store of `tail` before the load of `consumer_sleeping`, so
     * either we see it asleep or it sees the new tail. A release store alone would let the
     * load move before it.
     */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(r->consumer_sleeping, memory_order_seq_cst) != 0)
        return wake(s, r->data_seq);
    return 0;
}

/* The same for the input ring, in the other direction: freed space wakes the producer. */
static int announce_space(sluice_shm *s, int force)
{
    struct ring *r = &s->in;
    uint64_t unannounced = r->mine - r->announced;
    if (unannounced == 0 || (!force && unannounced < r->batch))
        return 0;
    r->announced = r->mine;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(r->producer_sleeping, memory_order_seq_cst) != 0)
        return wake(s, r->space_seq);
    return 0;
}

/*
 * Wakes every peer this side owes a wake-up, before this side may block: the flush-before-sleep
 * rule, applied to both directions. Blocking includes a read of stdin or a write to stdout when
 * the other direction is a ring: an engine waiting for our unannounced bytes or space would
 * otherwise wait for its own timeout.
 */
static int announce_all(sluice_shm *s)
{
    if (s->broken)
        return 0;
    if (s->has_out && announce_data(s, 1) != 0)
        return -1;
    if (s->has_in && announce_space(s, 1) != 0)
        return -1;
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* stdio                                                                                      */

static int stdout_flush(sluice_shm *s)
{
    if (s->olen == 0)
        return 0;
    if (announce_all(s) != 0)
        return -1;
    size_t done = 0;
    while (done < s->olen) {
        ssize_t n = write(STDOUT_FILENO, s->obuf + done, s->olen - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s->out_failed = 1;
            return fail(s, "write to stdout: %s", strerror(errno));
        }
        done += (size_t)n;
    }
    s->olen = 0;
    return 0;
}

static int stdout_write(sluice_shm *s, const char *buf, size_t len)
{
    if (len > STDIO_BUF - s->olen && stdout_flush(s) != 0)
        return -1;
    if (len <= STDIO_BUF - s->olen) {
        memcpy(s->obuf + s->olen, buf, len);
        s->olen += len;
        return 0;
    }
    /* Larger than the buffer: write it directly rather than in buffer-sized pieces. */
    if (announce_all(s) != 0)
        return -1;
    while (len > 0) {
        ssize_t n = write(STDOUT_FILENO, buf, len > SSIZE_MAX ? SSIZE_MAX : len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s->out_failed = 1;
            return fail(s, "write to stdout: %s", strerror(errno));
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static ptrdiff_t stdin_read(sluice_shm *s, void *buf, size_t len)
{
    if (announce_all(s) != 0)
        return -1;
    for (;;) {
        ssize_t n = read(STDIN_FILENO, buf, len);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            return fail(s, "read from stdin: %s", strerror(errno));
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Rings ("Moving bytes")                                                                     */

static void copy_out(const struct ring *r, uint64_t pos, unsigned char *dst, size_t len)
{
    size_t at = (size_t)(pos & (r->capacity - 1));
    size_t first = len < r->capacity - at ? len : (size_t)(r->capacity - at);
    memcpy(dst, r->data + at, first);
    if (first < len)
        memcpy(dst + first, r->data, len - first);
}

static void copy_in(struct ring *r, uint64_t pos, const unsigned char *src, size_t len)
{
    size_t at = (size_t)(pos & (r->capacity - 1));
    size_t first = len < r->capacity - at ? len : (size_t)(r->capacity - at);
    memcpy(r->data + at, src, first);
    if (first < len)
        memcpy(r->data, src + first, len - first);
}

/*
 * Accepts a `tail` of the input ring loaded from shared memory: it must not go backwards and
 * must satisfy head <= tail <= head + capacity. Whatever the engine wrote, we then never copy
 * more than `capacity` bytes from inside the ring.
 */
static int accept_tail(sluice_shm *s, uint64_t tail)
{
    struct ring *r = &s->in;
    if (tail - r->mine > r->capacity || tail - r->mine < r->theirs - r->mine) {
        s->broken = 1;
        return fail(s, "shm protocol violation: input ring tail %llu (head %llu, last tail %llu, "
                       "capacity %llu)",
                    (unsigned long long)tail, (unsigned long long)r->mine,
                    (unsigned long long)r->theirs, (unsigned long long)r->capacity);
    }
    r->theirs = tail;
    return 0;
}

/* Accepts a `head` of the output ring: it must lie between its last value and our `tail`. */
static int accept_head(sluice_shm *s, uint64_t head)
{
    struct ring *r = &s->out;
    if (head - r->theirs > r->mine - r->theirs) {
        s->broken = 1;
        return fail(s, "shm protocol violation: output ring head %llu (last head %llu, tail %llu)",
                    (unsigned long long)head, (unsigned long long)r->theirs,
                    (unsigned long long)r->mine);
    }
    r->theirs = head;
    return 0;
}

/* Makes the waiting side's flush-before-sleep and sleeps on `word` (see the two callers). */
static int sleep_on(sluice_shm *s, shared_u32 *word, unsigned seen)
{
    if (announce_all(s) != 0 || stdout_flush(s) != 0)
        return -1;
    return futex_wait(s, word, seen);
}

/*
 * The consumer, finding the input ring empty ("Sleeping and waking"). Returns 0 when the
 * caller should look at the ring again, -1 on error.
 */
static int wait_for_data(sluice_shm *s)
{
    struct ring *r = &s->in;
    /*
     * Announce the intent to sleep before the last look at `tail` (sequentially consistent, the
     * other half of the producer's fence): either the producer sees the flag and wakes us, or we
     * see its tail here. `seq` is loaded before the re-check so that a wake-up between the
     * re-check and FUTEX_WAIT changes the word and the wait returns at once.
     */
    atomic_store_explicit(r->consumer_sleeping, 1, memory_order_seq_cst);
    unsigned seq = atomic_load_explicit(r->data_seq, memory_order_seq_cst);
    int ready = atomic_load_explicit(r->tail, memory_order_seq_cst) != r->mine ||
                atomic_load_explicit(r->closed, memory_order_seq_cst) != 0;
    int rc = ready ? 0 : sleep_on(s, r->data_seq, seq);
    atomic_store_explicit(r->consumer_sleeping, 0, memory_order_seq_cst);
    if (rc < 0)
        return -1;
    if (!ready)
        check_engine(s, rc == 1);
    return 0;
}

/* The producer, finding the output ring full: the same with the roles swapped. */
static int wait_for_space(sluice_shm *s)
{
    struct ring *r = &s->out;
    atomic_store_explicit(r->producer_sleeping, 1, memory_order_seq_cst);
    unsigned seq = atomic_load_explicit(r->space_seq, memory_order_seq_cst);
    int rc = accept_head(s, atomic_load_explicit(r->head, memory_order_seq_cst));
    int ready = rc == 0 && r->mine - r->theirs < r->capacity;
    if (rc == 0 && !ready)
        rc = sleep_on(s, r->space_seq, seq);
    atomic_store_explicit(r->producer_sleeping, 0, memory_order_seq_cst);
    if (rc < 0)
        return -1;
    if (!ready)
        check_engine(s, rc == 1);
    return 0;
}

/* Reads up to len (> 0) bytes from the input ring: > 0 bytes read, 0 at the end, -1 error. */
static ptrdiff_t ring_read(sluice_shm *s, unsigned char *buf, size_t len)
{
    struct ring *r = &s->in;
    for (;;) {
        /*
         * `closed` before `tail`, both acquire ("End of stream"): a `closed` of 1 then comes
         * with the last tail, so an empty ring with `closed` set is really the end.
         */
        unsigned closed = atomic_load_explicit(r->closed, memory_order_acquire);
        /* Acquire: the bytes up to `tail` were copied in before it was published. */
        if (accept_tail(s, atomic_load_explicit(r->tail, memory_order_acquire)) != 0)
            return -1;
        uint64_t avail = r->theirs - r->mine;
        if (avail > 0) {
            size_t n = avail < len ? (size_t)avail : len;
            copy_out(r, r->mine, buf, n);
            r->mine += n;
            /* Release: our reads of the bytes happen before the producer may overwrite them. */
            atomic_store_explicit(r->head, r->mine, memory_order_release);
            if (announce_space(s, 0) != 0)
                return -1;
            return (ptrdiff_t)n;
        }
        if (closed)
            return 0;
        if (wait_for_data(s) != 0)
            return -1;
    }
}

/* Writes all of buf into the output ring, waiting for space as needed. */
static int ring_write(sluice_shm *s, const unsigned char *buf, size_t len)
{
    struct ring *r = &s->out;
    while (len > 0) {
        /*
         * The cached head is reloaded only when it leaves too little room: the line the
         * consumer writes is then read once per ring's worth of small records, not per record.
         * Acquire: the consumer had finished reading the bytes it freed.
         */
        if (r->capacity - (r->mine - r->theirs) < len &&
            accept_head(s, atomic_load_explicit(r->head, memory_order_acquire)) != 0)
            return -1;
        uint64_t room = r->capacity - (r->mine - r->theirs);
        if (room == 0) {
            if (wait_for_space(s) != 0)
                return -1;
            continue;
        }
        size_t n = room < len ? (size_t)room : len;
        copy_in(r, r->mine, buf, n);
        r->mine += n;
        /* Release: the bytes are in the ring before the consumer can see a tail covering them. */
        atomic_store_explicit(r->tail, r->mine, memory_order_release);
        if (announce_data(s, 0) != 0)
            return -1;
        buf += n;
        len -= n;
    }
    return 0;
}

/* Reads from wherever the input comes from, bypassing ibuf: > 0, 0 at the end, -1 error. */
static ptrdiff_t source_read(sluice_shm *s, void *buf, size_t len)
{
    if (s->ieof)
        return 0;
    if (len > PTRDIFF_MAX)
        len = PTRDIFF_MAX;
    if (s->has_in && s->broken)
        return fail(s, "the region is unusable after a protocol violation");
    ptrdiff_t n = s->has_in ? ring_read(s, buf, len) : stdin_read(s, buf, len);
    if (n == 0)
        s->ieof = 1;
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Attaching ("Setting up")                                                                   */

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/*
 * Checks that a present ring lies inside the region, on a boundary that suits its atomic words
 * (the engine puts it on a page; 128 bytes is what we rely on), with a power-of-two capacity of
 * at least MIN_CAPACITY. Returns 0 or writes the reason to `why`.
 */
static int check_ring(const char *name, uint64_t offset, uint64_t capacity, uint64_t region_len,
                      char *why, size_t why_len)
{
    if (capacity < MIN_CAPACITY || (capacity & (capacity - 1)) != 0) {
        snprintf(why, why_len, "the %s ring's capacity %llu is not a power of two of at least %d",
                 name, (unsigned long long)capacity, MIN_CAPACITY);
        return -1;
    }
    if (offset % 128 != 0) {
        snprintf(why, why_len, "the %s ring's offset %llu is not a multiple of 128", name,
                 (unsigned long long)offset);
        return -1;
    }
    /* offset + R_DATA + capacity <= region_len, written so that it cannot overflow. */
    if (offset < HEADER_LEN || offset > region_len ||
        region_len - offset < R_DATA || region_len - offset - R_DATA < capacity) {
        snprintf(why, why_len,
                 "the %s ring (offset %llu, capacity %llu) does not lie inside the region of "
                 "%llu bytes",
                 name, (unsigned long long)offset, (unsigned long long)capacity,
                 (unsigned long long)region_len);
        return -1;
    }
    return 0;
}

static void init_ring(struct ring *r, unsigned char *region, uint64_t offset, uint64_t capacity)
{
    unsigned char *base = region + offset;
    r->tail = (shared_u64 *)(void *)(base + R_TAIL);
    r->closed = (shared_u32 *)(void *)(base + R_CLOSED);
    r->head = (shared_u64 *)(void *)(base + R_HEAD);
    r->data_seq = (shared_u32 *)(void *)(base + R_DATA_SEQ);
    r->consumer_sleeping = (shared_u32 *)(void *)(base + R_CONSUMER_SLEEPING);
    r->space_seq = (shared_u32 *)(void *)(base + R_SPACE_SEQ);
    r->producer_sleeping = (shared_u32 *)(void *)(base + R_PRODUCER_SLEEPING);
    r->data = base + R_DATA;
    r->capacity = capacity;
    r->batch = capacity / 4;
}

/*
 * Attaches to the region open on `fd`, or exits with status 2 saying why: the one attach both
 * ways of finding the region share ("Setting up", step 3). `name` says where the descriptor
 * came from, for the messages. The descriptor is closed once the region is mapped.
 */
static void attach_region(sluice_shm *s, int fd, const char *name)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        die(2, "%s: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_size < HEADER_LEN || (uintmax_t)st.st_size > SIZE_MAX)
        die(2, "%s is not a shared-memory region (%lld bytes)", name, (long long)st.st_size);
    size_t region_len = (size_t)st.st_size;
    /*
     * The engine seals its memory file against resizing before it starts us: a file that could
     * still shrink under the mapping would make a later access fault (SIGBUS) instead of fail.
     */
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0)
        die(2, "%s: cannot read its seals: %s", name, strerror(errno));
    int needed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
    if ((seals & needed) != needed)
        die(2, "%s is not sealed against resizing (seals %#x)", name, (unsigned)seals);
    /*
     * MAP_POPULATE: the engine created (and populated) every page already; mapping them all
     * now costs one call instead of a page fault per page while records flow.
     */
    unsigned char *region =
        mmap(NULL, region_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (region == MAP_FAILED)
        die(2, "mapping the region: %s", strerror(errno));
    /*
     * The mapping outlives the descriptor. Closing it (the protocol asks for FD_CLOEXEC at
     * least) keeps it from leaking into programs we start.
     */
    if (close(fd) != 0)
        die(2, "closing %s: %s", name, strerror(errno));

    /*
     * The header was written before we were started, so plain reads see it. Each field is read
     * once into a local: nothing below depends on the region staying as it was checked.
     */
    char why[256];
    uint32_t header_version = get_u32(region + H_VERSION);
    uint32_t header_len = get_u32(region + H_HEADER_LEN);
    uint64_t header_region_len = get_u64(region + H_REGION_LEN);
    uint32_t rings = get_u32(region + H_RINGS);
    uint32_t engine_pid = get_u32(region + H_ENGINE_PID);
    uint64_t in_offset = get_u64(region + H_INPUT), in_capacity = get_u64(region + H_INPUT + 8);
    uint64_t out_offset = get_u64(region + H_OUTPUT), out_capacity = get_u64(region + H_OUTPUT + 8);
    if (memcmp(region + H_MAGIC, "SLUICESH", 8) != 0)
        die(2, "the region does not start with the magic SLUICESH");
    if (header_version != VERSION)
        die(2, "the engine speaks protocol version %lu; this client speaks version %d",
            (unsigned long)header_version, VERSION);
    if (header_len != HEADER_LEN)
        die(2, "header_len is %lu, not %d", (unsigned long)header_len, HEADER_LEN);
    if (header_region_len != region_len)
        die(2, "region_len is %llu but the region is %zu bytes",
            (unsigned long long)header_region_len, region_len);
    if (rings == 0 || (rings & ~(uint32_t)(RING_INPUT | RING_OUTPUT)) != 0)
        die(2, "rings is %#lx: expected bit 0, bit 1 or both", (unsigned long)rings);
    if (engine_pid == 0 || engine_pid > INT_MAX)
        die(2, "engine_pid %lu is not a process id", (unsigned long)engine_pid);
    if ((rings & RING_INPUT) &&
        check_ring("input", in_offset, in_capacity, region_len, why, sizeof why) != 0)
        die(2, "%s", why);
    if ((rings & RING_OUTPUT) &&
        check_ring("output", out_offset, out_capacity, region_len, why, sizeof why) != 0)
        die(2, "%s", why);
    if ((rings & RING_INPUT) && (rings & RING_OUTPUT) &&
        in_offset + R_DATA + in_capacity > out_offset &&
        out_offset + R_DATA + out_capacity > in_offset)
        die(2, "the input and output rings overlap");

    s->region = region;
    s->region_len = region_len;
    s->engine_pid = (pid_t)engine_pid;
    s->child_state = (shared_u32 *)(void *)(region + H_CHILD_STATE);
    s->engine_state = (shared_u32 *)(void *)(region + H_ENGINE_STATE);
    if (rings & RING_INPUT) {
        s->has_in = 1;
        init_ring(&s->in, region, in_offset, in_capacity);
        s->in.mine = atomic_load_explicit(s->in.head, memory_order_relaxed);
        s->in.theirs = s->in.mine;
        s->in.announced = s->in.mine;
    }
    if (rings & RING_OUTPUT) {
        s->has_out = 1;
        init_ring(&s->out, region, out_offset, out_capacity);
        s->out.mine = atomic_load_explicit(s->out.tail, memory_order_relaxed);
        s->out.theirs = s->out.mine;
        s->out.announced = s->out.mine;
    }

    /*
     * Only one process may attach, once: every process of a job's shell script inherits
     * SLUICE_SHM_FD (or could open the attach line's path), and a second one would interleave
     * its bytes with ours. Release: our reads of the header happen before the engine sees us
     * attached.
     */
    unsigned expected = CHILD_NOT_ATTACHED;
    if (!atomic_compare_exchange_strong_explicit(s->child_state, &expected, CHILD_ATTACHED,
                                                 memory_order_release, memory_order_relaxed))
        die(2, "another process has already attached to the region (child_state %u)", expected);
    if (syscall(SYS_futex, (void *)s->child_state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0)
        die(2, "futex wake: %s", strerror(errno));
}

/* Attaches to the region SLUICE_SHM_FD names, or exits with status 2 saying why. */
static void attach_env(sluice_shm *s, const char *fd_text)
{
    char *end;
    errno = 0;
    long fd = strtol(fd_text, &end, 10);
    /* 0, 1 and 2 are the standard streams, which a direction without a ring still uses. */
    if (errno != 0 || end == fd_text || *end != '\0' || fd < 3 || fd > INT_MAX)
        die(2, "SLUICE_SHM_FD=%s is not a descriptor number", fd_text);
    const char *version = getenv("SLUICE_SHM_VERSION");
    if (version != NULL && strcmp(version, "1") != 0)
        die(2, "the engine speaks protocol version %s; this client speaks version %d", version,
            VERSION);
    char name[64];
    snprintf(name, sizeof name, "SLUICE_SHM_FD=%ld", fd);
    attach_region(s, (int)fd, name);
    /* Programs we start must not try to attach to the region too. */
    if (unsetenv("SLUICE_SHM_FD") != 0 || unsetenv("SLUICE_SHM_VERSION") != 0)
        die(2, "unsetenv: %s", strerror(errno));
}

/* ---------------------------------------------------------------------------------------- */
/* The handshake ("Setting up under Hadoop Streaming: the handshake")                        */

static const char HELLO[] = "\x01sluice-shm hello 1\n";
static const char ATTACH_PREFIX[] = "\x01sluice-shm attach ";
enum { HELLO_LEN = sizeof HELLO - 1, ATTACH_PREFIX_LEN = sizeof ATTACH_PREFIX - 1 };
#define WRITER_CLASS "org.sluice.hadoop.streaming.ShmInputWriter"

static int ours(const char *variable)
{
    const char *v = getenv(variable);
    return v != NULL && strcmp(v, WRITER_CLASS) == 0;
}

/*
 * Whether the environment Hadoop Streaming exports (job settings, dots turned to underscores)
 * shows that sluice's plugin writes our input, so that someone will answer an offer. A
 * combiner runs in a map task with the reduce side's writer and an environment that cannot be
 * told from the mapper's: with a combiner in the job, a map task offers only if both writers
 * are the plugin's.
 */
static int offers(void)
{
    const char *is_map = getenv("mapreduce_task_ismap");
    int map = ours("stream_map_input_writer_class");
    int reduce = ours("stream_reduce_input_writer_class");
    if (is_map != NULL && strcmp(is_map, "true") == 0) {
        const char *combiner = getenv("stream_combine_streamprocessor");
        return map && (combiner == NULL || *combiner == '\0' || reduce);
    }
    if (is_map != NULL && strcmp(is_map, "false") == 0)
        return reduce;
    return map && reduce;
}

/*
 * Doubles the input buffer. Kept below PTRDIFF_MAX, so that every length fits the return type
 * of the reads.
 */
static int grow_input(sluice_shm *s)
{
    char *bigger = s->icap <= PTRDIFF_MAX / 2 ? realloc(s->ibuf, s->icap * 2) : NULL;
    if (bigger == NULL)
        return fail(s, "out of memory for a line longer than %zu bytes", s->icap);
    s->ibuf = bigger;
    s->icap *= 2;
    return 0;
}

/* Follows the attach line ibuf[0, len), its '\n' included, or exits with status 2. */
static void attach_line(sluice_shm *s, size_t len)
{
    /* `<version> <path>`: the path is everything after the first space, spaces included. */
    char *version = s->ibuf + ATTACH_PREFIX_LEN;
    char *line_end = s->ibuf + len - 1;
    *line_end = '\0';
    if (memchr(version, '\0', (size_t)(line_end - version)) != NULL)
        die(2, "malformed attach line: it holds a NUL byte");
    char *space = strchr(version, ' ');
    if (space == NULL)
        die(2, "malformed attach line: no version and path");
    *space = '\0';
    const char *path = space + 1;
    if (strcmp(version, "1") != 0)
        die(2, "the engine speaks protocol version %.40s; this client speaks version %d", version,
            VERSION);
    if (*path == '\0')
        die(2, "the attach line names no region");
    /* O_CLOEXEC: the descriptor lives only until the mapping is made, in no program we start. */
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        die(2, "cannot open the region %.256s%s: %s", path, strlen(path) > 256 ? "..." : "",
            strerror(errno));
    attach_region(s, fd, path);
}

/*
 * Offers the handshake and follows the answer: attaches if the first line of stdin is an
 * attach line, or else leaves every byte read in ibuf, where the reads find them first: they
 * are the first record (or the end of the input), and the program stays on pipes.
 *
 * Reading stops as soon as the bytes differ from the attach line's prefix, so a long first
 * record costs no scan to its end here; only a line that starts like an attach line is read to
 * its '\n'. Reads take whatever stdin has, into a buffer that grows as read_line's does.
 */
static void handshake(sluice_shm *s)
{
    /*
     * Straight to the descriptor, with nothing of ours buffered yet: the engine looks for the
     * hello as the very first bytes of our stdout.
     */
    for (size_t done = 0; done < HELLO_LEN;) {
        ssize_t n = write(STDOUT_FILENO, HELLO + done, HELLO_LEN - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            die(2, "writing the handshake to stdout: %s", strerror(errno));
        done += (size_t)n;
    }
    size_t scanned = 0; /* ibuf[ATTACH_PREFIX_LEN, scanned) holds no '\n' */
    for (;;) {
        size_t prefix = s->iend < ATTACH_PREFIX_LEN ? s->iend : ATTACH_PREFIX_LEN;
        if (memcmp(s->ibuf, ATTACH_PREFIX, prefix) != 0)
            return; /* a record */
        if (s->iend > ATTACH_PREFIX_LEN) {
            if (scanned < ATTACH_PREFIX_LEN)
                scanned = ATTACH_PREFIX_LEN;
            char *nl = memchr(s->ibuf + scanned, '\n', s->iend - scanned);
            if (nl != NULL) {
                size_t len = (size_t)(nl + 1 - s->ibuf);
                /*
                 * The engine writes nothing after the attach line (its input goes through the
                 * ring): bytes here mean the two sides disagree about what stdin carries.
                 */
                if (s->iend > len)
                    die(2, "shm protocol violation: %zu bytes followed the attach line on stdin",
                        s->iend - len);
                attach_line(s, len);
                s->iend = 0;
                return;
            }
            scanned = s->iend;
        }
        /*
         * The engine ends its attach line with '\n': input that ends first only looks like
         * one, and is a record.
         */
        if (s->ieof)
            return;
        if (s->iend == s->icap && grow_input(s) != 0)
            die(2, "reading the handshake from stdin: %s", s->err);
        ptrdiff_t n = source_read(s, s->ibuf + s->iend, s->icap - s->iend);
        if (n < 0)
            die(2, "reading the handshake from stdin: %s", s->err);
        s->iend += (size_t)n;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The API                                                                                    */

sluice_shm *sluice_shm_open(void)
{
    sluice_shm *s = calloc(1, sizeof *s);
    if (s == NULL)
        die(2, "out of memory");
    /* Allocated first: the handshake reads into it what may be the first record. */
    s->icap = STDIO_BUF;
    s->ibuf = malloc(s->icap);
    if (s->ibuf == NULL)
        die(2, "out of memory");
    const char *fd_text = getenv("SLUICE_SHM_FD");
    if (fd_text != NULL)
        attach_env(s, fd_text);
    else if (offers())
        handshake(s);
    s->obuf = s->has_out ? NULL : malloc(STDIO_BUF);
    if (!s->has_out && s->obuf == NULL)
        die(2, "out of memory");
    return s;
}

int sluice_shm_is_shm(const sluice_shm *s)
{
    return s->has_in || s->has_out;
}

ptrdiff_t sluice_shm_read(sluice_shm *s, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (s->iend > s->ipos) {
        size_t n = s->iend - s->ipos < len ? s->iend - s->ipos : len;
        memcpy(buf, s->ibuf + s->ipos, n);
        s->ipos += n;
        return (ptrdiff_t)n;
    }
    return source_read(s, buf, len);
}

ptrdiff_t sluice_shm_read_line(sluice_shm *s, const char **line)
{
    size_t scanned = s->ipos; /* ibuf[ipos, scanned) holds no '\n' */
    for (;;) {
        char *nl = memchr(s->ibuf + scanned, '\n', s->iend - scanned);
        if (nl != NULL || (s->ieof && s->iend > s->ipos)) {
            size_t n = nl != NULL ? (size_t)(nl + 1 - (s->ibuf + s->ipos)) : s->iend - s->ipos;
            *line = s->ibuf + s->ipos;
            s->ipos += n;
            return (ptrdiff_t)n;
        }
        if (s->ieof)
            return 0;
        scanned = s->iend;
        /* No '\n' in the buffer: make room for more, at the front first, else by growing. */
        if (s->ipos > 0) {
            memmove(s->ibuf, s->ibuf + s->ipos, s->iend - s->ipos);
            s->iend -= s->ipos;
            scanned -= s->ipos;
            s->ipos = 0;
        }
        if (s->iend == s->icap && grow_input(s) != 0)
            return -1;
        ptrdiff_t n = source_read(s, s->ibuf + s->iend, s->icap - s->iend);
        if (n < 0)
            return -1;
        s->iend += (size_t)n;
    }
}

int sluice_shm_write(sluice_shm *s, const void *buf, size_t len)
{
    if (!s->has_out)
        return stdout_write(s, buf, len);
    if (s->broken)
        return fail(s, "the region is unusable after a protocol violation");
    if (ring_write(s, buf, len) != 0) {
        s->out_failed = 1;
        return -1;
    }
    return 0;
}

int sluice_shm_flush(sluice_shm *s)
{
    if (!s->has_out)
        return stdout_flush(s);
    if (s->broken)
        return fail(s, "the region is unusable after a protocol violation");
    return announce_data(s, 1);
}

int sluice_shm_close(sluice_shm *s)
{
    int rc = sluice_shm_flush(s);
    if (rc == 0 && s->out_failed)
        rc = fail(s, "some output was lost: an earlier write failed");
    /*
     * Close the output ring only if all the output made it: with the ring left open, the engine
     * fails the task even if we exit with status 0.
     */
    if (s->has_out && rc == 0) {
        /* Release: the last tail is published before `closed`, which the consumer loads first. */
        atomic_store_explicit(s->out.closed, 1, memory_order_release);
        rc = wake(s, s->out.data_seq);
    }
    if (s->region != NULL) {
        /* DETACHED means a normal end: the output was all delivered and its ring closed. */
        if (rc == 0) {
            atomic_store_explicit(s->child_state, CHILD_DETACHED, memory_order_release);
            if (syscall(SYS_futex, (void *)s->child_state, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0)
                rc = fail(s, "futex wake: %s", strerror(errno));
        }
        if (munmap(s->region, s->region_len) != 0 && rc == 0)
            rc = fail(s, "unmapping the region: %s", strerror(errno));
    }
    if (rc != 0)
        fprintf(stderr, "sluice_shm: %s\n", s->err);
    free(s->ibuf);
    free(s->obuf);
    free(s);
    return rc;
}

const char *sluice_shm_last_error(const sluice_shm *s)
{
    return s->err;
}
