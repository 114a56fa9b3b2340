/*
 * The C client's handshake under Hadoop Streaming (docs/shm-protocol.md, "Setting up under
 * Hadoop Streaming: the handshake"), tested against a fake engine: this program plays the
 * plugin's part, on the pipes of a child it starts and, when it answers with an attach line,
 * through a region of its own (a sealed memfd named by its /proc path, as the plugin makes it).
 *
 *     handshake_test CONFORM
 *
 * CONFORM is the conformance child (tests/shm/conform.c, linked with the library), whose
 * `copy` and `lines` scenarios copy their input to their output. Every case checks the exact
 * bytes the child wrote, on stdout and through the output ring, its exit status, and what it
 * stored in child_state. Prints one line per failing case; exits 0 if every case passed.
 */
#define _GNU_SOURCE /* memfd_create, pipe2, F_ADD_SEALS */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELLO "\x01sluice-shm hello 1\n"
#define HELLO_LEN (sizeof HELLO - 1)
#define PREFIX "\x01sluice-shm attach "
#define OURS "org.sluice.hadoop.streaming.ShmInputWriter"
#define STOCK "org.apache.hadoop.streaming.io.TextInputWriter"

/* No case takes more than a second or two; a hung child is killed after this. */
#define CASE_SECONDS 60
/* How long the engine waits for the hello, as the plugin's sluice.shm.handshake.timeout.ms. */
#define OFFER_MS 5000

static const char *conform;

static _Noreturn void fatal(const char *what)
{
    fprintf(stderr, "handshake_test: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---------------------------------------------------------------------------------------- */
/* Byte buffers                                                                               */

struct bytes {
    char *p;
    size_t len, cap;
};

static void append(struct bytes *b, const void *data, size_t len)
{
    if (b->cap - b->len < len) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < len)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (b->p == NULL)
            fatal("realloc");
        b->cap = cap;
    }
    if (len > 0)
        memcpy(b->p + b->len, data, len);
    b->len += len;
}

static void append_str(struct bytes *b, const char *s)
{
    append(b, s, strlen(s));
}

/* Lines of random lengths up to `max` bytes, any byte but '\n' in them. */
static void append_records(struct bytes *b, size_t count, size_t max, uint64_t seed)
{
    uint64_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < count; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        size_t len = (size_t)(x >> 33) % (max + 1);
        if (i % 7 != 0)
            len %= 64; /* most records are short */
        for (size_t j = 0; j < len; j++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            char c = (char)(x >> 56);
            append(b, c == '\n' ? "x" : &c, 1);
        }
        append(b, "\n", 1);
    }
}

static struct bytes concat(const struct bytes *a, const struct bytes *b)
{
    struct bytes r = {0};
    append(&r, a->p, a->len);
    append(&r, b->p, b->len);
    return r;
}

static int same(const struct bytes *a, const struct bytes *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* Says where two byte strings first differ, for a failure message. */
static void describe_difference(char *out, size_t out_len, const struct bytes *want,
                                const struct bytes *got)
{
    size_t i = 0;
    while (i < want->len && i < got->len && want->p[i] == got->p[i])
        i++;
    snprintf(out, out_len, "expected %zu bytes, got %zu; first difference at byte %zu", want->len,
             got->len, i);
}

/* ---------------------------------------------------------------------------------------- */
/* Time                                                                                       */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
    struct timespec left = {ms / 1000, ms % 1000 * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The region, as the engine makes it ("Setting up", step 1; "Memory layout")                 */

enum { HEADER_LEN = 4096, R_DATA = 384 };

struct ring {
    _Atomic unsigned long long *tail, *head;
    _Atomic unsigned int *closed, *data_seq, *space_seq, *consumer_sleeping, *producer_sleeping;
    unsigned char *data;
    uint64_t capacity;
};

struct region {
    int fd; /* -1 once closed, as the plugin closes it after the attach */
    unsigned char *base;
    size_t len;
    struct ring in, out;
    int has_out;
    _Atomic unsigned int *child_state;
};

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static void init_ring(struct ring *r, unsigned char *base, uint64_t offset, uint64_t capacity)
{
    r->tail = (void *)(base + offset);
    r->closed = (void *)(base + offset + 8);
    r->head = (void *)(base + offset + 128);
    r->data_seq = (void *)(base + offset + 256);
    r->consumer_sleeping = (void *)(base + offset + 260);
    r->space_seq = (void *)(base + offset + 264);
    r->producer_sleeping = (void *)(base + offset + 268);
    r->data = base + offset + R_DATA;
    r->capacity = capacity;
}

/* A ring's control block and data, rounded up to whole pages as the engine lays rings out. */
static uint64_t ring_span(uint64_t capacity)
{
    return (R_DATA + capacity + 4095) / 4096 * 4096;
}

static void make_region(struct region *g, uint64_t capacity, int has_out, int sealed)
{
    uint64_t in_offset = HEADER_LEN, out_offset = in_offset + ring_span(capacity);
    g->len = (size_t)(out_offset + (has_out ? ring_span(capacity) : 0));
    g->fd = memfd_create("sluice-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (g->fd < 0)
        fatal("memfd_create");
    if (ftruncate(g->fd, (off_t)g->len) != 0)
        fatal("ftruncate");
    if (sealed && fcntl(g->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
        fatal("F_ADD_SEALS");
    g->base = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
    if (g->base == MAP_FAILED)
        fatal("mmap");
    memcpy(g->base, "SLUICESH", 8);
    put_u32(g->base + 8, 1);
    put_u32(g->base + 12, HEADER_LEN);
    put_u64(g->base + 16, g->len);
    put_u32(g->base + 24, has_out ? 3 : 1);
    put_u32(g->base + 28, (uint32_t)getpid());
    put_u64(g->base + 32, in_offset);
    put_u64(g->base + 40, capacity);
    if (has_out) {
        put_u64(g->base + 48, out_offset);
        put_u64(g->base + 56, capacity);
    }
    g->child_state = (void *)(g->base + 64);
    g->has_out = has_out;
    init_ring(&g->in, g->base, in_offset, capacity);
    if (has_out)
        init_ring(&g->out, g->base, out_offset, capacity);
}

static void close_region_fd(struct region *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
}

static void futex_wake(_Atomic unsigned int *word)
{
    syscall(SYS_futex, (void *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void futex_wait_ms(_Atomic unsigned int *word, unsigned seen, long ms)
{
    struct timespec t = {0, ms * 1000000L};
    syscall(SYS_futex, (void *)word, FUTEX_WAIT, seen, &t, NULL, 0);
}

/*
 * The engine's side of the rings, kept simple: it wakes the child after every publish, which
 * the protocol allows (a waker may always wake), and waits at most 20 ms at a time. The child's
 * side, batched wake-ups and all, is what is under test; it wakes us only if we say we sleep.
 */
static void bump(_Atomic unsigned int *seq)
{
    atomic_fetch_add(seq, 1);
    futex_wake(seq);
}

/* ---------------------------------------------------------------------------------------- */
/* One run of the child                                                                       */

enum answer {
    NO_WAIT,  /* the records straight away, without waiting for an offer (no plugin) */
    RECORDS,  /* wait for the offer, then answer with the records (pipes) */
    ATTACH,   /* wait for the offer, then answer with an attach line (rings) */
    BY_FD,    /* the sluice engine's way: SLUICE_SHM_FD, no handshake */
};

struct spec {
    const char *name;
    const char *scenario;        /* conform's: copy or lines */
    const char *env[8];          /* the child's whole environment */
    enum answer answer;
    struct bytes input;          /* the records */
    /* ATTACH and BY_FD */
    uint64_t capacity;           /* of each ring; 0 means 65536 */
    int stdout_output;           /* no output ring: output on stdout */
    const char *attach_line;     /* instead of the right one; "%s" is the region's path */
    const char *after_attach;    /* bytes written on stdin right after the attach line */
    int split;                   /* the attach line in two writes, 100 ms apart */
    int corrupt;                 /* 1: a wrong magic; 2: child_state already ATTACHED */
    int unsealed;                /* the region's memory file is not sealed against resizing */
};

struct result {
    int status; /* the child's exit status, or 128 + signal */
    int offered;
    int timed_out;
    struct bytes out; /* stdout, all of it */
    struct bytes err;
    struct bytes ring_out;
    int saw_attached;   /* child_state became ATTACHED after the attach line */
    int kept_fd;        /* the child still had the region's descriptor once ATTACHED */
    unsigned final_state;
    char problem[256];  /* what went wrong on the engine's side */
};

struct run {
    pid_t pid;
    int in_fd, out_fd, err_fd;
    double deadline;
    atomic_int child_gone;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int out_eof;
    struct result *r;
    const struct bytes *input;
    struct region *region; /* NULL if the input goes on stdin */
    const char *feed_error;
};

/* Reads the child's stdout and stderr to their ends. */
static void *drain(void *arg)
{
    struct run *run = arg;
    struct pollfd fds[2] = {{run->out_fd, POLLIN, 0}, {run->err_fd, POLLIN, 0}};
    char buf[65536];
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, 100) < 0 && errno != EINTR)
            fatal("poll");
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || fds[i].revents == 0)
                continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            pthread_mutex_lock(&run->lock);
            if (n > 0) {
                append(i == 0 ? &run->r->out : &run->r->err, buf, (size_t)n);
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
                if (i == 0)
                    run->out_eof = 1;
            }
            pthread_cond_broadcast(&run->changed);
            pthread_mutex_unlock(&run->lock);
        }
    }
    return NULL;
}

static int give_up(struct run *run)
{
    return atomic_load(&run->child_gone) || now() > run->deadline;
}

/* Writes the input into the input ring and closes it, then stdin, as the plugin does. */
static void feed_ring(struct run *run)
{
    struct ring *r = &run->region->in;
    const char *p = run->input->p;
    size_t left = run->input->len;
    uint64_t tail = atomic_load(r->tail);
    while (left > 0) {
        uint64_t room = r->capacity - (tail - atomic_load(r->head));
        if (room == 0) {
            if (give_up(run)) {
                run->feed_error = "the child stopped reading the input ring";
                return;
            }
            /* "Sleeping and waking": announce, then look again, then sleep. */
            atomic_store(r->producer_sleeping, 1);
            unsigned seen = atomic_load(r->space_seq);
            if (atomic_load(r->head) == tail - r->capacity)
                futex_wait_ms(r->space_seq, seen, 20);
            atomic_store(r->producer_sleeping, 0);
            continue;
        }
        size_t n = room < left ? (size_t)room : left;
        size_t at = (size_t)(tail & (r->capacity - 1));
        size_t first = n < r->capacity - at ? n : (size_t)(r->capacity - at);
        memcpy(r->data + at, p, first);
        memcpy(r->data, p + first, n - first);
        tail += n;
        atomic_store(r->tail, tail);
        bump(r->data_seq);
        p += n;
        left -= n;
    }
    atomic_store(r->closed, 1);
    bump(r->data_seq);
}

static void *feed(void *arg)
{
    struct run *run = arg;
    if (run->region != NULL) {
        feed_ring(run);
    } else {
        const char *p = run->input->p;
        size_t left = run->input->len;
        while (left > 0) {
            ssize_t n = write(run->in_fd, p, left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                /* EPIPE: the child is gone; its status and output tell the case what happened. */
                break;
            }
            p += n;
            left -= (size_t)n;
        }
    }
    close(run->in_fd);
    return NULL;
}

/* Reads the output ring to its end (closed), or until the child is gone. */
static void consume(struct run *run)
{
    struct ring *r = &run->region->out;
    uint64_t head = atomic_load(r->head);
    for (;;) {
        unsigned closed = atomic_load(r->closed);
        uint64_t tail = atomic_load(r->tail);
        if (tail - head > r->capacity) {
            snprintf(run->r->problem, sizeof run->r->problem, "output ring tail %llu, head %llu",
                     (unsigned long long)tail, (unsigned long long)head);
            return;
        }
        if (tail != head) {
            while (head != tail) {
                size_t at = (size_t)(head & (r->capacity - 1));
                size_t n = (size_t)(tail - head) < r->capacity - at ? (size_t)(tail - head)
                                                                     : (size_t)(r->capacity - at);
                append(&run->r->ring_out, r->data + at, n);
                head += n;
            }
            atomic_store(r->head, head);
            bump(r->space_seq);
            continue;
        }
        if (closed)
            return;
        if (give_up(run)) {
            snprintf(run->r->problem, sizeof run->r->problem, "the output ring never closed");
            return;
        }
        atomic_store(r->consumer_sleeping, 1);
        unsigned seen = atomic_load(r->data_seq);
        if (atomic_load(r->tail) == head && !atomic_load(r->closed))
            futex_wait_ms(r->data_seq, seen, 20);
        atomic_store(r->consumer_sleeping, 0);
        /* The child is gone but the ring is not closed: one more look, then give up. */
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)run->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == run->pid)
            atomic_store(&run->child_gone, 1);
    }
}

/* Waits for the child's first stdout bytes to tell whether it offered. */
static void wait_for_offer(struct run *run)
{
    double until = now() + OFFER_MS / 1000.0;
    pthread_mutex_lock(&run->lock);
    for (;;) {
        struct bytes *out = &run->r->out;
        size_t n = out->len < HELLO_LEN ? out->len : HELLO_LEN;
        int differs = memcmp(out->p ? out->p : "", HELLO, n) != 0;
        if (out->len >= HELLO_LEN || differs || run->out_eof || now() > until)
            break;
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += 20 * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&run->changed, &run->lock, &t);
    }
    run->r->offered = run->r->out.len >= HELLO_LEN && memcmp(run->r->out.p, HELLO, HELLO_LEN) == 0;
    pthread_mutex_unlock(&run->lock);
}

/* Waits for child_state to leave 0; 1 if it became ATTACHED. */
static int wait_attached(struct run *run)
{
    for (;;) {
        unsigned state = atomic_load(run->region->child_state);
        if (state != 0)
            return state == 1;
        siginfo_t info = {0};
        if ((waitid(P_PID, (id_t)run->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
             info.si_pid == run->pid) ||
            now() > run->deadline)
            return atomic_load(run->region->child_state) == 1;
        futex_wait_ms(run->region->child_state, 0, 20);
    }
}

/* Whether process `pid` has a descriptor open on a memfd named sluice-shm. */
static int holds_region(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", (long)pid);
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[320], target[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            found |= strstr(target, "memfd:sluice-shm") != NULL;
        }
    }
    closedir(d);
    return found;
}

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return; /* the child is gone: its status tells */
        p += n;
        len -= (size_t)n;
    }
}

static void run_child(const struct spec *spec, struct result *r)
{
    memset(r, 0, sizeof *r);
    struct run run = {.r = r, .input = &spec->input, .deadline = now() + CASE_SECONDS};
    pthread_mutex_init(&run.lock, NULL);
    pthread_cond_init(&run.changed, NULL);
    uint64_t capacity = spec->capacity ? spec->capacity : 65536;
    struct region region = {.fd = -1};

    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
        fatal("pipe2");
    /* The sluice engine's region exists before the child; the plugin's only after the hello. */
    char fd_var[32] = "";
    if (spec->answer == BY_FD) {
        make_region(&region, capacity, !spec->stdout_output, !spec->unsealed);
        snprintf(fd_var, sizeof fd_var, "SLUICE_SHM_FD=%d", region.fd);
    }
    const char *env[10];
    size_t n_env = 0;
    for (size_t i = 0; i < 8 && spec->env[i] != NULL; i++)
        env[n_env++] = spec->env[i];
    if (spec->answer == BY_FD) {
        env[n_env++] = fd_var;
        env[n_env++] = "SLUICE_SHM_VERSION=1";
    }
    env[n_env] = NULL;
    char *argv[] = {(char *)conform, (char *)spec->scenario, NULL};

    run.pid = fork();
    if (run.pid < 0)
        fatal("fork");
    if (run.pid == 0) {
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
            _exit(126);
        /* Only the sluice engine's way hands the descriptor down. */
        if (spec->answer == BY_FD && fcntl(region.fd, F_SETFD, 0) != 0)
            _exit(126);
        execve(conform, argv, (char *const *)env);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    run.in_fd = in[1];
    run.out_fd = out[0];
    run.err_fd = err[0];

    pthread_t drainer, feeder;
    int feeding = 0;
    pthread_create(&drainer, NULL, drain, &run);

    switch (spec->answer) {
    case BY_FD:
        /* Under the sluice engine the child's stdin is /dev/null when the input ring is used. */
        close(run.in_fd);
        run.in_fd = -1;
        run.region = &region;
        if (!wait_attached(&run)) {
            snprintf(r->problem, sizeof r->problem, "the child never attached");
            break;
        }
        r->saw_attached = 1;
        r->kept_fd = holds_region(run.pid);
        close_region_fd(&region);
        if (pipe2(in, O_CLOEXEC) != 0) /* a stdin for the feeder to close */
            fatal("pipe2");
        close(in[0]);
        run.in_fd = in[1];
        pthread_create(&feeder, NULL, feed, &run);
        feeding = 1;
        if (region.has_out)
            consume(&run);
        break;
    case NO_WAIT:
        pthread_create(&feeder, NULL, feed, &run);
        feeding = 1;
        break;
    case RECORDS:
        wait_for_offer(&run);
        pthread_create(&feeder, NULL, feed, &run);
        feeding = 1;
        break;
    case ATTACH: {
        wait_for_offer(&run);
        if (!r->offered) {
            snprintf(r->problem, sizeof r->problem, "no offer to answer");
            break;
        }
        make_region(&region, capacity, !spec->stdout_output, !spec->unsealed);
        run.region = &region;
        if (spec->corrupt == 1)
            memcpy(region.base, "SLUICESX", 8);
        if (spec->corrupt == 2)
            atomic_store(region.child_state, 1);
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%ld/fd/%d", (long)getpid(), region.fd);
        snprintf(line, sizeof line, spec->attach_line ? spec->attach_line : PREFIX "1 %s\n",
                 path);
        /* Bytes after the line go in the same write, so that the child's first read has them. */
        if (spec->after_attach != NULL)
            strncat(line, spec->after_attach, sizeof line - strlen(line) - 1);
        size_t len = strlen(line), first = spec->split ? 9 : len;
        write_all(run.in_fd, line, first);
        if (spec->split) {
            sleep_ms(100);
            write_all(run.in_fd, line + first, len - first);
        }
        if (spec->corrupt == 2) {
            /* Already "attached": the child's attach must fail without touching it. */
            break;
        }
        if (!wait_attached(&run))
            break; /* a failing attach: the child's status and stderr tell */
        r->saw_attached = 1;
        r->kept_fd = holds_region(run.pid);
        close_region_fd(&region);
        pthread_create(&feeder, NULL, feed, &run);
        feeding = 1;
        if (region.has_out)
            consume(&run);
        break;
    }
    }
    if (!feeding && run.in_fd >= 0)
        close(run.in_fd);

    int status;
    for (;;) {
        pid_t w = waitpid(run.pid, &status, WNOHANG);
        if (w == run.pid)
            break;
        if (w < 0 && errno != EINTR)
            fatal("waitpid");
        if (now() > run.deadline && !r->timed_out) {
            r->timed_out = 1;
            kill(run.pid, SIGKILL);
        }
        sleep_ms(5);
    }
    atomic_store(&run.child_gone, 1);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (feeding)
        pthread_join(feeder, NULL);
    pthread_join(drainer, NULL);
    if (run.feed_error != NULL && r->problem[0] == '\0')
        snprintf(r->problem, sizeof r->problem, "%s", run.feed_error);
    if (region.base != NULL) {
        r->final_state = atomic_load(region.child_state);
        munmap(region.base, region.len);
    }
    close_region_fd(&region);
    pthread_mutex_destroy(&run.lock);
    pthread_cond_destroy(&run.changed);
}

/* ---------------------------------------------------------------------------------------- */
/* The cases                                                                                  */

enum outcome {
    PIPES,     /* exit 0; stdout is the expected output */
    RINGS,     /* exit 0; attached, then DETACHED; the output ring (or stdout) carried it */
    REFUSED,   /* exit 2 with a message on stderr; stdout is the hello only */
};

struct expect {
    enum outcome outcome;
    int offer;             /* 1 if stdout must begin with the hello */
    const char *message;   /* REFUSED: a part of the stderr message */
};

static int failures, cases;

static void failed(const char *name, const struct result *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void failed(const char *name, const struct result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s: ", name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (exit %d%s%s%s)", r->status, r->timed_out ? ", killed by the watchdog" : "",
            r->problem[0] ? "; engine: " : "", r->problem);
    if (r->err.len > 0)
        fprintf(stderr, "; child's stderr: %.*s", (int)(r->err.len > 400 ? 400 : r->err.len),
                r->err.p);
    fputc('\n', stderr);
    failures++;
}

static void check(const struct spec *spec, struct expect want)
{
    struct result r;
    char diff[160];
    cases++;
    run_child(spec, &r);
    struct bytes hello = {0};
    if (want.offer)
        append_str(&hello, HELLO);

    if (r.offered != want.offer && spec->answer != NO_WAIT) {
        failed(spec->name, &r, want.offer ? "no hello on stdout" : "offered");
        goto done;
    }
    switch (want.outcome) {
    case PIPES: {
        struct bytes expected = concat(&hello, &spec->input);
        if (r.status != 0 || r.timed_out || r.problem[0])
            failed(spec->name, &r, "the child failed");
        else if (!same(&expected, &r.out)) {
            describe_difference(diff, sizeof diff, &expected, &r.out);
            failed(spec->name, &r, "stdout is not %sthe input: %s",
                   want.offer ? "the hello and " : "", diff);
        }
        free(expected.p);
        break;
    }
    case RINGS: {
        struct bytes expected = spec->stdout_output ? concat(&hello, &spec->input) : hello;
        const struct bytes *ring = spec->stdout_output ? &spec->input : &r.ring_out;
        if (r.status != 0 || r.timed_out || r.problem[0])
            failed(spec->name, &r, "the child failed");
        else if (!r.saw_attached)
            failed(spec->name, &r, "child_state never became ATTACHED");
        else if (r.kept_fd)
            failed(spec->name, &r, "the child kept the region's descriptor open after attaching");
        else if (r.final_state != 2)
            failed(spec->name, &r, "child_state is %u at the end, not DETACHED", r.final_state);
        else if (!same(&spec->input, ring)) {
            describe_difference(diff, sizeof diff, &spec->input, ring);
            failed(spec->name, &r, "the output ring did not carry the input: %s", diff);
        } else if (!same(&expected, &r.out)) {
            describe_difference(diff, sizeof diff, &expected, &r.out);
            failed(spec->name, &r, "stdout is not %s: %s",
                   spec->stdout_output ? "the hello and the input" : "the hello alone", diff);
        }
        if (spec->stdout_output)
            free(expected.p);
        break;
    }
    case REFUSED: {
        append(&r.err, "", 1); /* a C string from here */
        if (r.status != 2 || r.timed_out)
            failed(spec->name, &r, "expected exit status 2");
        else if (strstr(r.err.p, "sluice_shm: ") == NULL || strstr(r.err.p, want.message) == NULL)
            failed(spec->name, &r, "stderr does not say \"%s\"", want.message);
        else if (r.saw_attached)
            failed(spec->name, &r, "attached");
        else if (!same(&hello, &r.out)) {
            describe_difference(diff, sizeof diff, &hello, &r.out);
            failed(spec->name, &r, "stdout is not the hello alone: %s", diff);
        }
        break;
    }
    }
done:
    free(hello.p);
    free(r.out.p);
    free(r.err.p);
    free(r.ring_out.p);
}

#define IS_MAP "mapreduce_task_ismap=true"
#define IS_REDUCE "mapreduce_task_ismap=false"
#define MAP_OURS "stream_map_input_writer_class=" OURS
#define MAP_STOCK "stream_map_input_writer_class=" STOCK
#define REDUCE_OURS "stream_reduce_input_writer_class=" OURS
#define REDUCE_STOCK "stream_reduce_input_writer_class=" STOCK
#define COMBINER "stream_combine_streamprocessor=cat"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: handshake_test CONFORM\n");
        return 2;
    }
    conform = argv[1];
    if (access(conform, X_OK) != 0)
        fatal(conform);
    signal(SIGPIPE, SIG_IGN);

    struct bytes records = {0};
    append_records(&records, 20000, 3000, 1);
    /* Input whose first line would be an attach line, were it read as one. */
    struct bytes tricky = {0};
    append_str(&tricky, PREFIX "1 /nonexistent\n");
    append(&tricky, records.p, records.len);
    /* Input whose first lines look like the hello and almost like an attach line. */
    struct bytes lookalike = {0};
    append_str(&lookalike, HELLO PREFIX);
    lookalike.len -= 2; /* "\x01sluice-shm attac" */
    append_str(&lookalike, "\n");
    append(&lookalike, records.p, records.len);
    /* 3 MB without a '\n', then more lines; and 3 MB that starts like an attach line. */
    struct bytes huge = {0};
    for (int i = 0; i < 3 << 20; i++)
        append(&huge, &"abcdefghijklmnopqrstuvwxyz"[i % 26], 1);
    append_str(&huge, "\nlast\n");
    struct bytes huge_prefixed = {0};
    append_str(&huge_prefixed, PREFIX "1 /");
    append(&huge_prefixed, huge.p, huge.len - 6); /* no '\n' at all */
    /* The same with its '\n': an attach line, of a path too long to open. */
    struct bytes huge_attach = {0};
    append(&huge_attach, huge_prefixed.p, huge_prefixed.len);
    append_str(&huge_attach, "\n");
    struct bytes partial = {0};
    append_str(&partial, "one line without its newline");
    struct bytes empty = {0};

    /* (1) No offer unless the plugin's writer feeds this child: stdout is exactly the input. */
    const char *not_ours[][8] = {
        {NULL},
        {IS_MAP, MAP_STOCK},
        {IS_MAP, REDUCE_OURS},
        {IS_MAP, MAP_OURS, REDUCE_STOCK, COMBINER}, /* a combiner with the stock writer */
        {IS_MAP, MAP_OURS, COMBINER},
        {IS_REDUCE, MAP_OURS, REDUCE_STOCK},
        {IS_REDUCE, MAP_OURS},
        {MAP_OURS},
        {REDUCE_OURS},
        {"mapreduce_task_ismap=yes", MAP_OURS},
        {IS_MAP, "stream_map_input_writer_class=" OURS "2"},
        {IS_MAP, "stream_map_input_writer_class="},
    };
    for (size_t i = 0; i < sizeof not_ours / sizeof not_ours[0]; i++) {
        struct spec s = {.name = "no offer", .scenario = i % 2 ? "copy" : "lines",
                         .answer = NO_WAIT, .input = tricky};
        memcpy(s.env, not_ours[i], sizeof s.env);
        char name[64];
        snprintf(name, sizeof name, "no offer (environment %zu)", i);
        s.name = name;
        check(&s, (struct expect){PIPES, 0, NULL});
    }

    /* (2) An offer answered with records: the first line is the first record. */
    const char *offering[][8] = {
        {IS_MAP, MAP_OURS},
        {IS_MAP, MAP_OURS, REDUCE_STOCK},
        {IS_MAP, MAP_OURS, "stream_combine_streamprocessor="},
        {IS_MAP, MAP_OURS, REDUCE_OURS, COMBINER},
        {IS_REDUCE, REDUCE_OURS},
        {IS_REDUCE, MAP_STOCK, REDUCE_OURS},
        {MAP_OURS, REDUCE_OURS},
        {"mapreduce_task_ismap=yes", MAP_OURS, REDUCE_OURS},
    };
    for (size_t i = 0; i < sizeof offering / sizeof offering[0]; i++) {
        struct spec s = {.scenario = i % 2 ? "copy" : "lines", .answer = RECORDS,
                         .input = lookalike};
        memcpy(s.env, offering[i], sizeof s.env);
        char name[64];
        snprintf(name, sizeof name, "offer, answered with records (environment %zu)", i);
        s.name = name;
        check(&s, (struct expect){PIPES, 1, NULL});
    }
    /* A first record that starts like an attach line is one, whoever wrote it. */
    check(&(struct spec){.name = "offer, answered with records that start with the attach prefix",
                         .scenario = "copy", .env = {IS_MAP, MAP_OURS}, .answer = RECORDS,
                         .input = tricky},
          (struct expect){REFUSED, 1, "followed the attach line"});
    check(&(struct spec){.name = "offer, answered with one line and no newline", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = RECORDS, .input = partial},
          (struct expect){PIPES, 1, NULL});

    /* (3) An offer answered with the end of the input: no records. */
    check(&(struct spec){.name = "offer, answered with the end (lines)", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = RECORDS, .input = empty},
          (struct expect){PIPES, 1, NULL});
    check(&(struct spec){.name = "offer, answered with the end (copy)", .scenario = "copy",
                         .env = {IS_REDUCE, REDUCE_OURS}, .answer = RECORDS, .input = empty},
          (struct expect){PIPES, 1, NULL});

    /* (4) An offer answered with an attach line: the records go through the rings. */
    check(&(struct spec){.name = "attach, both rings of 4096 bytes", .scenario = "copy",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .capacity = 4096},
          (struct expect){RINGS, 1, NULL});
    check(&(struct spec){.name = "attach, both rings of 64 KiB", .scenario = "lines",
                         .env = {IS_REDUCE, REDUCE_OURS}, .answer = ATTACH, .input = records},
          (struct expect){RINGS, 1, NULL});
    check(&(struct spec){.name = "attach, output on stdout", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .stdout_output = 1},
          (struct expect){RINGS, 1, NULL});
    check(&(struct spec){.name = "attach, the line in two pieces", .scenario = "copy",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .split = 1},
          (struct expect){RINGS, 1, NULL});
    check(&(struct spec){.name = "attach, empty input", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = empty},
          (struct expect){RINGS, 1, NULL});
    check(&(struct spec){.name = "attach, a 3 MB line", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = huge,
                         .capacity = 4096},
          (struct expect){RINGS, 1, NULL});
    /* The attach shared with the sluice engine's way, which must still work. */
    check(&(struct spec){.name = "SLUICE_SHM_FD, no handshake", .scenario = "copy",
                         .env = {IS_MAP, MAP_OURS}, .answer = BY_FD, .input = records},
          (struct expect){RINGS, 0, NULL});

    /* (5) An attach line the child cannot follow: exit status 2, the reason on stderr. */
    check(&(struct spec){.name = "attach line naming no region", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .attach_line = PREFIX "1 /nonexistent/sluice-region%.0s\n"},
          (struct expect){REFUSED, 1, "/nonexistent/sluice-region"});
    check(&(struct spec){.name = "attach line naming a file that is no region", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .attach_line = PREFIX "1 /dev/null%.0s\n"},
          (struct expect){REFUSED, 1, "not a shared-memory region"});
    check(&(struct spec){.name = "attach line of version 2", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .attach_line = PREFIX "2 %s\n"},
          (struct expect){REFUSED, 1, "version 2"});
    check(&(struct spec){.name = "attach line without a path", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .attach_line = PREFIX "1%.0s\n"},
          (struct expect){REFUSED, 1, "malformed attach line"});
    check(&(struct spec){.name = "bytes after the attach line", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .after_attach = "a record\n"},
          (struct expect){REFUSED, 1, "9 bytes followed the attach line"});
    check(&(struct spec){.name = "attach to a region with a wrong magic", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .corrupt = 1},
          (struct expect){REFUSED, 1, "magic"});
    check(&(struct spec){.name = "attach to a region already attached", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .corrupt = 2},
          (struct expect){REFUSED, 1, "already attached"});
    check(&(struct spec){.name = "attach to a region that could still shrink", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = ATTACH, .input = records,
                         .unsealed = 1},
          (struct expect){REFUSED, 1, "is not sealed against resizing"});

    /* (6) A first line of 3 MB, with and without the handshake. */
    check(&(struct spec){.name = "3 MB first line, no offer", .scenario = "copy",
                         .answer = NO_WAIT, .input = huge},
          (struct expect){PIPES, 0, NULL});
    check(&(struct spec){.name = "3 MB first line, no offer (lines)", .scenario = "lines",
                         .env = {IS_MAP, MAP_STOCK}, .answer = NO_WAIT, .input = huge},
          (struct expect){PIPES, 0, NULL});
    check(&(struct spec){.name = "offer, answered with a 3 MB first line", .scenario = "copy",
                         .env = {IS_MAP, MAP_OURS}, .answer = RECORDS, .input = huge},
          (struct expect){PIPES, 1, NULL});
    check(&(struct spec){.name = "offer, answered with 3 MB like an attach line, no newline",
                         .scenario = "lines", .env = {IS_MAP, MAP_OURS}, .answer = RECORDS,
                         .input = huge_prefixed},
          (struct expect){PIPES, 1, NULL});

    /* Read to its '\n' however long, in a growing buffer: the attach is then refused. */
    check(&(struct spec){.name = "offer, answered with a 3 MB attach line", .scenario = "lines",
                         .env = {IS_MAP, MAP_OURS}, .answer = RECORDS, .input = huge_attach},
          (struct expect){REFUSED, 1, "cannot open the region /abcdefghij"});

    free(huge_attach.p);
    free(records.p);
    free(tricky.p);
    free(lookalike.p);
    free(huge.p);
    free(huge_prefixed.p);
    free(partial.p);
    if (failures > 0) {
        fprintf(stderr, "handshake_test: %d of %d cases failed\n", failures, cases);
        return 1;
    }
    printf("handshake_test: %d cases passed\n", cases);
    return 0;
}
