/*
 * sluice_shm: the C client of the sluice shared-memory streaming protocol, version 1
 * (docs/shm-protocol.md).
 *
 * A streaming mapper or reducer reads its input and writes its output through one handle.
 * Under sluice with shared memory enabled, the handle moves the bytes through the rings of the
 * region named by SLUICE_SHM_FD; under Hadoop Streaming with sluice's plugin (-io shm), through
 * the rings of the region the plugin names in answer to a handshake; anywhere else (a terminal,
 * a plain pipe, Hadoop Streaming without the plugin) it reads stdin and writes stdout. Either
 * way the program sees exactly the bytes a pipe would carry, so the same binary works in every
 * place.
 *
 *     sluice_shm *s = sluice_shm_open();
 *     const char *line;
 *     ptrdiff_t n;
 *     while ((n = sluice_shm_read_line(s, &line)) > 0)
 *         if (sluice_shm_write(s, line, (size_t)n) != 0)
 *             break;
 *     if (n < 0 || sluice_shm_close(s) != 0) ...
 *
 * A handle is not thread-safe: use it from one thread at a time. Do not mix it with stdio on
 * the same direction (printf to stdout while the handle writes stdout): each buffers on its own.
 */
#ifndef SLUICE_SHM_H
#define SLUICE_SHM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sluice_shm sluice_shm;

/*
 * Opens the program's input and output. If SLUICE_SHM_FD is set, attaches to the region it
 * names: maps it, checks the header, marks the child ATTACHED, closes the descriptor and
 * removes SLUICE_SHM_FD and SLUICE_SHM_VERSION from the environment (so that programs this one
 * starts do not attach to the same region).
 *
 * Otherwise, under Hadoop Streaming, when the environment shows that sluice's plugin writes
 * this program's input (the writer class Hadoop exports for this task is
 * org.sluice.hadoop.streaming.ShmInputWriter), it first offers the handshake of
 * docs/shm-protocol.md, "Setting up under Hadoop Streaming": it writes the 20-byte hello line
 * "\x01sluice-shm hello 1\n" straight to descriptor 1, then reads the first line of stdin. An
 * attach line ("\x01sluice-shm attach 1 <path>\n") makes it open <path> and attach to that
 * region as above. Any other answer, or the end of stdin, means pipes: the bytes read stay the
 * first bytes the program reads, whatever the first record's length. Call it before the
 * program writes to stdout itself: the plugin looks for the hello as the first bytes there.
 *
 * Otherwise uses stdin and stdout. A direction whose ring the region lacks uses them too.
 *
 * Never returns NULL. If a region cannot be attached (a bad descriptor or path, an unsupported
 * version, a malformed header or attach line, bytes after the attach line, another process
 * attached first, no memory), it writes the reason to stderr and exits with status 2, as the
 * protocol requires: the engine is not using stdin and stdout, so falling back to them would
 * only hide the problem.
 */
sluice_shm *sluice_shm_open(void);

/* 1 if at least one direction goes through a shared-memory ring, 0 if both use stdio. */
int sluice_shm_is_shm(const sluice_shm *s);

/*
 * Reads up to len bytes into buf. Returns the number read (> 0), 0 at the end of the input (or
 * if len is 0), -1 on error (see sluice_shm_last_error). Returns as soon as some bytes are
 * available; blocks only while there are none.
 */
ptrdiff_t sluice_shm_read(sluice_shm *s, void *buf, size_t len);

/*
 * Reads one line: sets *line to its bytes, the '\n' included (the last line of the input may
 * lack it), and returns its length. Returns 0 at the end of the input, -1 on error. The bytes
 * stay valid until the next call on the handle. Lines may be of any length; they may contain
 * any byte, NUL included. sluice_shm_read and sluice_shm_read_line may be mixed.
 */
ptrdiff_t sluice_shm_read_line(sluice_shm *s, const char **line);

/*
 * Writes len bytes. Returns 0 or -1 on error. Into a ring, the bytes are copied straight into
 * shared memory and published; the reader is woken in batches, so call sluice_shm_flush when
 * the reader must see them now (rarely needed: the library also wakes the reader whenever this
 * side is about to wait). To stdout, the bytes are buffered and written in large chunks.
 */
int sluice_shm_write(sluice_shm *s, const void *buf, size_t len);

/* Makes everything written so far visible to the reader now. Returns 0 or -1 on error. */
int sluice_shm_flush(sluice_shm *s);

/*
 * Flushes, closes the output (the output ring is marked closed and its reader woken), marks
 * the child DETACHED, unmaps the region and frees the handle, which must not be used again.
 * stdin and stdout themselves are left open. Returns 0, or -1 if the final flush or an earlier
 * write failed; the reason is then written to stderr, because the handle is gone. After a
 * failed write the output ring is left open and the child ATTACHED, so that the engine fails
 * the task even if the program exits with status 0: some output was lost.
 */
int sluice_shm_close(sluice_shm *s);

/* Why the last failing call failed; "" if none has. Valid until the next call on the handle. */
const char *sluice_shm_last_error(const sluice_shm *s);

/*
 * A dead or aborting engine is not an error a call returns. When a wait times out (every wait
 * on a ring is bounded to 200 ms) and the engine process no longer exists, or whenever the
 * engine has marked the task ABORTED, the library writes the reason to stderr and exits with
 * status 1, as the protocol requires: nobody is left to read the output.
 */

#ifdef __cplusplus
}
#endif

#endif
