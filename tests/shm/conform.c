/*
 * The conformance child: a streaming program that exercises the C client (clients/c) in the
 * ways an engine's tests need, over shared memory or, without SLUICE_SHM_FD, stdin and stdout.
 *
 *     conform copy | lines | slow-reader | slow-writer | die | garbage
 *
 * copy         copies input to output with reads of 1, 7, 4096, 65536, 300000 bytes in turn
 * lines        copies input to output line by line (sluice_shm_read_line)
 * slow-reader  copy, sleeping 2 ms after each 64 KiB read
 * slow-writer  copy, flushing and sleeping 2 ms after each 64 KiB written
 * die          reads up to 100000 bytes, writes the first 1000, flushes, exits with status 7
 *              without closing
 * garbage      reads up to 4096 bytes, then corrupts the region (the output ring's tail beyond
 *              anything possible, the header's magic and ring offsets) and sleeps 10 s: the
 *              engine must see a protocol violation and end it
 *
 * Exits 0 after a normal end, 1 after a library error, 2 on bad usage.
 */
#define _GNU_SOURCE /* syscall */

#include "sluice_shm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
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

static const char *scenario;

static _Noreturn void library_error(sluice_shm *s)
{
    fprintf(stderr, "conform %s: %s\n", scenario, sluice_shm_last_error(s));
    exit(1);
}

static _Noreturn void system_error(const char *what)
{
    fprintf(stderr, "conform %s: %s: %s\n", scenario, what, strerror(errno));
    exit(1);
}

static void sleep_ms(long ms)
{
    struct timespec left = {ms / 1000, ms % 1000 * 1000000L};
    while (nanosleep(&left, &left) != 0)
        if (errno != EINTR)
            system_error("nanosleep");
}

static _Noreturn void finish(sluice_shm *s)
{
    if (sluice_shm_close(s) != 0)
        exit(1); /* sluice_shm_close has said why */
    exit(0);
}

enum pace { STEADY, SLOW_READER, SLOW_WRITER };

/* copy, slow-reader, slow-writer. */
static _Noreturn void copy(sluice_shm *s, enum pace pace)
{
    static const size_t sizes[] = {1, 7, 4096, 65536, 300000};
    const size_t pause_every = 64 * 1024;
    char *buf = malloc(300000);
    if (buf == NULL)
        system_error("malloc");
    size_t turn = 0, since_pause = 0;
    for (;;) {
        ptrdiff_t n = sluice_shm_read(s, buf, sizes[turn]);
        turn = (turn + 1) % (sizeof sizes / sizeof sizes[0]);
        if (n < 0)
            library_error(s);
        if (n == 0)
            break;
        since_pause += (size_t)n;
        if (pace == SLOW_READER && since_pause >= pause_every) {
            sleep_ms(2);
            since_pause = 0;
        }
        if (sluice_shm_write(s, buf, (size_t)n) != 0)
            library_error(s);
        if (pace == SLOW_WRITER && since_pause >= pause_every) {
            if (sluice_shm_flush(s) != 0)
                library_error(s);
            sleep_ms(2);
            since_pause = 0;
        }
    }
    free(buf);
    finish(s);
}

static _Noreturn void lines(sluice_shm *s)
{
    const char *line;
    ptrdiff_t n;
    while ((n = sluice_shm_read_line(s, &line)) > 0)
        if (sluice_shm_write(s, line, (size_t)n) != 0)
            library_error(s);
    if (n < 0)
        library_error(s);
    finish(s);
}

/* Reads until `want` bytes or the end of the input; returns how many it got. */
static size_t read_up_to(sluice_shm *s, char *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ptrdiff_t n = sluice_shm_read(s, buf + got, want - got);
        if (n < 0)
            library_error(s);
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return got;
}

static _Noreturn void die_midway(sluice_shm *s)
{
    static char buf[100000];
    size_t got = read_up_to(s, buf, sizeof buf);
    if (sluice_shm_write(s, buf, got < 1000 ? got : 1000) != 0 || sluice_shm_flush(s) != 0)
        library_error(s);
    _exit(7);
}

/*
 * A hostile child. It maps the region itself, before sluice_shm_open (which closes the
 * descriptor), reading the layout from the header like any client would; it does not need the
 * library's view of it.
 */
static _Noreturn void garbage(void)
{
    unsigned char *region = NULL;
    const char *fd_text = getenv("SLUICE_SHM_FD");
    if (fd_text != NULL) {
        int fd = atoi(fd_text);
        struct stat st;
        if (fstat(fd, &st) != 0)
            system_error("fstat");
        region = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (region == MAP_FAILED)
            system_error("mmap");
    }
    sluice_shm *s = sluice_shm_open();
    char buf[4096];
    read_up_to(s, buf, sizeof buf);
    if (region != NULL) {
        uint32_t rings;
        memcpy(&rings, region + 24, 4);
        if (rings & 2) {
            /* The library checked the layout at attach: these offsets are inside the region. */
            uint64_t offset, capacity;
            memcpy(&offset, region + 48, 8);
            memcpy(&capacity, region + 56, 8);
            _Atomic unsigned long long *tail = (void *)(region + offset);
            _Atomic unsigned long long *head = (void *)(region + offset + 128);
            _Atomic unsigned int *data_seq = (void *)(region + offset + 256);
            atomic_store(tail, atomic_load(head) + 3 * capacity);
            atomic_fetch_add(data_seq, 1);
            if (syscall(SYS_futex, (void *)data_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0)
                system_error("futex wake");
        }
        memset(region, 0xFF, 8);       /* magic */
        memset(region + 32, 0xFF, 32); /* both rings' offset and capacity */
    }
    sleep_ms(10000);
    exit(0);
}

int main(int argc, char **argv)
{
    scenario = argc == 2 ? argv[1] : "";
    if (strcmp(scenario, "garbage") == 0)
        garbage();
    if (strcmp(scenario, "copy") == 0)
        copy(sluice_shm_open(), STEADY);
    if (strcmp(scenario, "slow-reader") == 0)
        copy(sluice_shm_open(), SLOW_READER);
    if (strcmp(scenario, "slow-writer") == 0)
        copy(sluice_shm_open(), SLOW_WRITER);
    if (strcmp(scenario, "lines") == 0)
        lines(sluice_shm_open());
    if (strcmp(scenario, "die") == 0)
        die_midway(sluice_shm_open());
    fprintf(stderr, "usage: conform copy|lines|slow-reader|slow-writer|die|garbage\n");
    return 2;
}
